package pve

import (
	"context"
	"net/netip"
	"strings"

	proxmox "github.com/luthermonson/go-proxmox"
)

// AgentInterface is one guest network interface the QEMU guest agent reports.
type AgentInterface struct {
	Name string
	MAC  string
	// Addresses are the interface's IPv4 and IPv6 addresses without prefix length.
	Addresses []netip.Addr
}

// AgentInterfaces asks the guest agent for the guest's interfaces. It fails
// (with a Proxmox 500 "QEMU guest agent is not running") while the agent is
// not answering; callers poll.
func (c *Client) AgentInterfaces(ctx context.Context, ref VMRef) ([]AgentInterface, error) {
	// go-proxmox's types; not VirtualMachine.AgentGetNetworkIFaces, which
	// needs a VirtualMachine that go-proxmox reads first (two requests).
	var resp struct {
		Result []*proxmox.AgentNetworkIface `json:"result"`
	}
	if err := c.get(ctx, ref.path("/agent/network-get-interfaces"), &resp); err != nil {
		return nil, err
	}
	var out []AgentInterface
	for _, r := range resp.Result {
		ai := AgentInterface{Name: r.Name, MAC: strings.ToUpper(r.HardwareAddress)}
		for _, a := range r.IPAddresses {
			if addr, err := netip.ParseAddr(a.IPAddress); err == nil {
				ai.Addresses = append(ai.Addresses, addr)
			}
		}
		out = append(out, ai)
	}
	return out, nil
}

// IsAgentNotRunning reports the answers Proxmox gives while the guest agent
// does not respond yet: "QEMU guest agent is not running", "VM <id> is not
// running" (qemu-server src/PVE/QemuServer/Agent.pm) and a QMP "got timeout".
// "No QEMU guest agent configured" is not among them: waiting will not help.
func IsAgentNotRunning(err error) bool {
	if err == nil {
		return false
	}
	m := strings.ToLower(err.Error())
	return strings.Contains(m, "guest agent is not running") || strings.Contains(m, "is not running") ||
		strings.Contains(m, "got timeout")
}
