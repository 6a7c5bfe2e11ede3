package proxmox

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

// vmResourceID is the resource ID of a VM: "<node>/<vmid>".
func vmResourceID(ref pve.VMRef) string { return fmt.Sprintf("%s/%d", ref.Node, ref.VMID) }

// parseVMResourceID reads "<node>/<vmid>"; a bare "<vmid>" has no node.
func parseVMResourceID(id string) (pve.VMRef, error) {
	node, num, ok := strings.Cut(id, "/")
	if !ok {
		node, num = "", id
	}
	vmid, err := strconv.Atoi(num)
	if err != nil || vmid < 100 {
		return pve.VMRef{}, fmt.Errorf("%q is not a VM id: use <node>/<vmid>, for example pve1/104", id)
	}
	return pve.VMRef{Node: node, VMID: vmid}, nil
}

// observe reads a VM's configuration, power state and (when asked) pool.
// found is false when the VM does not exist on any node.
func observe(ctx context.Context, c *pve.Client, ref pve.VMRef, withPool bool) (o observation, found bool, err error) {
	var vms []pve.ClusterVM
	if ref.Node == "" || withPool {
		if vms, err = c.ClusterVMs(ctx); err != nil {
			return o, false, err
		}
		located := false
		for _, vm := range vms {
			if vm.VMID == ref.VMID {
				ref.Node, o.Pool, located = vm.Node, vm.Pool, true
			}
		}
		if !located {
			return o, false, nil
		}
	}
	cfg, err := c.VMConfig(ctx, ref)
	if pve.IsNotFound(err) && !withPool {
		// moved to another node outside Pulumi, or deleted
		return observe(ctx, c, pve.VMRef{VMID: ref.VMID}, true)
	}
	if pve.IsNotFound(err) {
		return o, false, nil
	}
	if err != nil {
		return o, false, err
	}
	st, err := c.VMStatus(ctx, ref)
	if err != nil {
		return o, false, err
	}
	return observation{Ref: ref, Config: cfg, Status: st, Pool: o.Pool}, true, nil
}

// stateFrom builds the state from an observation; in are the inputs the
// user gave (observed values replace them only where the VM differs).
func stateFrom(o observation, in VirtualMachineArgs, addrs []netip.Addr) VirtualMachineState {
	obs := observeArgs(o)
	st := VirtualMachineState{
		VirtualMachineArgs: reconcile(in, obs),
		VMID:               o.Ref.VMID,
		Status:             o.Status.PowerState(),
		MACAddresses:       []string{},
		IPv4Addresses:      []string{},
		IPv6Addresses:      []string{},
	}
	if obs.SmbiosUUID != nil {
		st.SmbiosUUID = *obs.SmbiosUUID
	}
	for _, n := range obs.NetworkDevices {
		if n.MACAddress != nil {
			st.MACAddresses = append(st.MACAddresses, *n.MACAddress)
		}
	}
	st.IPv4Addresses, st.IPv6Addresses = splitAddresses(addrs)
	return st
}

// usable keeps the addresses a client can reach the guest on. The loopback
// interface ("lo") is skipped by name by the callers; 127.0.0.0/8 addresses
// on other interfaces are kept, which is what the lab gives its VMs.
func usable(a netip.Addr) bool {
	a = a.Unmap()
	return a != netip.IPv6Loopback() && a != netip.AddrFrom4([4]byte{127, 0, 0, 1}) &&
		!a.IsLinkLocalUnicast() && !a.IsUnspecified() && !a.IsMulticast()
}

func splitAddresses(addrs []netip.Addr) (v4, v6 []string) {
	v4, v6 = []string{}, []string{}
	for _, a := range addrs {
		switch {
		case !usable(a):
		case a.Is4() || a.Is4In6():
			v4 = append(v4, a.Unmap().String())
		default:
			v6 = append(v6, a.String())
		}
	}
	return v4, v6
}

var agentReadRetry = pve.RetryPolicy{Initial: 250 * time.Millisecond, Max: 2 * time.Second}

// guestAddresses asks the guest agent once for the guest's addresses. It
// answers nothing (and no error) when the agent does not answer yet.
func guestAddresses(ctx context.Context, c *pve.Client, ref pve.VMRef) ([]netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var ifaces []pve.AgentInterface
	// a passing server or proxy error on this read must not fail a refresh
	err := agentReadRetry.Retry(ctx, "asking the guest agent of "+ref.String()+" for its addresses", true,
		func(ctx context.Context) error {
			var err error
			if ifaces, err = c.AgentInterfaces(ctx, ref); pve.IsAgentNotRunning(err) {
				return nil // not up yet: no addresses, nothing to retry
			}
			return err
		})
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil
		}
		return nil, err
	}
	var out []netip.Addr
	for _, i := range ifaces {
		if i.Name == "lo" {
			continue
		}
		out = append(out, i.Addresses...)
	}
	return out, nil
}

// agentEnabled reports whether the VM's config enables the guest agent.
func agentOn(cfg pve.VMConfig) bool { return truthy(agentEnabled(cfg["agent"])) }

// readState observes the VM and builds its state, asking the guest agent for
// addresses when the VM runs with the agent enabled.
func readState(ctx context.Context, c *pve.Client, ref pve.VMRef, in VirtualMachineArgs) (VirtualMachineState, bool, error) {
	st, _, found, err := readStateAndConfig(ctx, c, ref, in, nil, false)
	return st, found, err
}

// readStateAndConfig is readState that also returns the configuration it
// used. known is the VM's configuration when the caller read it after its
// last change (see converge), nil when not: then it is read. Only the power
// state and the guest's addresses are read in any case, the power state
// unless started: the caller started the VM with that configuration
// moments ago (converge), whose task said it runs.
func readStateAndConfig(ctx context.Context, c *pve.Client, ref pve.VMRef, in VirtualMachineArgs, known pve.VMConfig, started bool) (
	VirtualMachineState, pve.VMConfig, bool, error) {
	var (
		o     observation
		found bool
		err   error
	)
	if known != nil && started && in.Pool == nil && ref.Node != "" {
		o, found = observation{Ref: ref, Config: known, Status: pve.VMStatus{Status: "running", QMPStatus: "running"}}, true
	}
	if !found && known != nil && in.Pool == nil && ref.Node != "" {
		st, serr := c.VMStatus(ctx, ref)
		switch {
		case serr == nil:
			o, found = observation{Ref: ref, Config: known, Status: st}, true
		case !pve.IsNotFound(serr):
			return VirtualMachineState{}, nil, false, serr
		}
		// not found: gone or moved meanwhile, which observe finds out
	}
	if !found {
		if o, found, err = observe(ctx, c, ref, in.Pool != nil || ref.Node == ""); err != nil || !found {
			return VirtualMachineState{}, nil, found, err
		}
	}
	var addrs []netip.Addr
	// a paused VM's agent runs no code: asking would only time out
	if o.Status.Running() && !o.Status.Paused() && agentOn(o.Config) {
		if addrs, err = guestAddresses(ctx, c, o.Ref); err != nil {
			return VirtualMachineState{}, o.Config, true, err
		}
	}
	return stateFrom(o, in, addrs), o.Config, true, nil
}
