package cluster

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/provider/childargs"
	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/proxmox"
)

// Network settings that only reach the VMs' devices and cloud-init drives
// (bridges, VLANs, MTUs, DNS) may be outputs of other resources: a bridge
// or VLAN created by another provider, DNS servers from an invoke or a
// stack reference. The plan does not count or place nodes with them, so a
// preview in which one is not known yet plans with a placeholder (what
// the cluster's VMs have now, else the default) and registers each VM with
// that setting unknown: the preview shows every VM's setting as changing
// once known, and the update, which gets the value, checks it (the bridge
// exists on each host, the VLAN tag is 1-4094) before creating anything.
// They are not secret-capable: Proxmox shows them to anyone who can read
// the VM.
var vmSetting = regexp.MustCompile(`^network\.(bridge|vlan|mtu|searchDomain|dnsServers(\[\d+\])?|secondary\.(bridge|vlan|mtu))$`)

// unknownBridge stands in for a secondary bridge (a required input) that
// is not known yet and that no VM shows.
const unknownBridge = "unknown-bridge"

// vmSettingPlaceholder is what acceptInputValues plans an unknown VM
// setting with before the cluster's VMs are read (fillUnknownNetwork then
// puts in what they have): left out (the default), except the required
// secondary bridge.
func vmSettingPlaceholder(path string) (v string, drop bool) {
	if path == "network.secondary.bridge" {
		return unknownBridge, false
	}
	return "", true
}

type unknownVMKey struct{}

// unknownVMInputs are the VM settings of the construct running in ctx that
// are not known yet (a preview), by input path ("network.dnsServers[1]").
func unknownVMInputs(ctx context.Context) []string {
	v, _ := ctx.Value(unknownVMKey{}).([]string)
	return v
}

// vmUnknowns says which settings of every VM are not known in this
// preview, by NIC (0 primary, 1 secondary).
type vmUnknowns struct {
	bridge, vlan, mtu [2]bool
	dns, search       bool
}

func (u vmUnknowns) any() bool { return u != vmUnknowns{} }

func newVMUnknowns(paths []string) vmUnknowns {
	var u vmUnknowns
	for _, p := range paths {
		nic := 0
		if strings.HasPrefix(p, "network.secondary.") {
			nic = 1
		}
		switch {
		case strings.HasSuffix(p, ".bridge"):
			u.bridge[nic] = true
		case strings.HasSuffix(p, ".vlan"):
			u.vlan[nic] = true
		case strings.HasSuffix(p, ".mtu"):
			u.mtu[nic] = true
		case strings.HasPrefix(p, "network.dnsServers"):
			u.dns = true
		case p == "network.searchDomain":
			u.search = true
		}
	}
	return u
}

// fillUnknownNetwork puts into args, for each unknown setting, what the
// cluster's VMs have now (so that a preview of an existing cluster does not
// report a change it cannot know of); a new cluster keeps the placeholder.
func fillUnknownNetwork(args *TalosClusterArgs, u vmUnknowns, vms []plan.ObservedVM) {
	var seen *plan.ObservedVM
	for i := range vms {
		if !vms[i].Template && len(vms[i].NICs) > 0 {
			seen = &vms[i]
			break
		}
	}
	if seen == nil {
		return
	}
	n := &args.Network
	if u.bridge[0] {
		n.Bridge = seen.NICs[0].Bridge
	}
	if u.vlan[0] {
		n.Vlan = seen.NICs[0].VLAN
	}
	if u.mtu[0] {
		n.Mtu = seen.NICs[0].MTU
	}
	if u.dns {
		n.DnsServers = slices.Clone(seen.DNSServers)
	}
	if u.search {
		n.SearchDomain = seen.SearchDomain
	}
	if sec := n.Secondary; sec != nil && len(seen.NICs) > 1 {
		if u.bridge[1] {
			sec.Bridge = seen.NICs[1].Bridge
		}
		if u.vlan[1] {
			sec.Vlan = seen.NICs[1].VLAN
		}
		if u.mtu[1] {
			sec.Mtu = seen.NICs[1].MTU
		}
	}
}

// withoutBridgeCheck forgets the hosts' bridges (not checked) when a
// bridge is not known: the update checks it.
func withoutBridgeCheck(hosts map[string]plan.HostFacts, u vmUnknowns) map[string]plan.HostFacts {
	if hosts == nil || !u.bridge[0] && !u.bridge[1] {
		return hosts
	}
	out := maps.Clone(hosts)
	for k, hf := range out {
		hf.Bridges = nil
		out[k] = hf
	}
	return out
}

// unknownVMWarning says which VM settings are not known and what the
// preview shows for them.
func unknownVMWarning(paths []string) string {
	return fmt.Sprintf("%s %s not known until the resources %s from are created: every node's VM shows %s as "+
		"changing once known (a DNS change restarts the VMs one at a time); the update checks %s against the hosts "+
		"before it changes anything", strings.Join(paths, ", "), isAre(len(paths)),
		map[bool]string{true: "it comes", false: "they come"}[len(paths) == 1], itThem(len(paths)), itThem(len(paths)))
}

// markUnknownVMSettings lists every existing node in the preview's summary
// as changing once the unknown settings are known: updated in place for
// the NICs (Proxmox hotplugs network devices), rebooted for DNS (Talos
// reads the cloud-init drive at boot, plan.restartReasons), as the update
// would do if the values differ from what the VMs have.
func markUnknownVMSettings(s *plan.Summary, p *plan.Plan, paths []string, u vmUnknowns) {
	action := plan.ActionUpdate
	if u.dns || u.search {
		action = plan.ActionReboot
	}
	reason := strings.Join(paths, ", ") + ": changes once known"
	for i := range p.Nodes {
		if n := &p.Nodes[i]; n.Existing {
			s.Mark(n.Name, n.Role, action, reason)
		}
	}
}

func unknownString() pulumi.StringOutput {
	return pulumi.UnsafeUnknownOutput(nil).ApplyT(func(any) string { return "" }).(pulumi.StringOutput)
}

func unknownInt() pulumi.IntOutput {
	return pulumi.UnsafeUnknownOutput(nil).ApplyT(func(any) int { return 0 }).(pulumi.IntOutput)
}

// unknownSettings binds a VM's settings that are not known yet to unknown
// values in its inputs (vmArgs).
func unknownSettings(args *proxmox.VirtualMachineArgs, u vmUnknowns) []childargs.Binding {
	var out []childargs.Binding
	for k := range args.NetworkDevices {
		if k > 1 {
			break
		}
		nic := &args.NetworkDevices[k]
		if u.bridge[k] {
			out = append(out, childargs.Bind(&nic.Bridge, unknownString()))
		}
		if u.vlan[k] {
			out = append(out, childargs.BindPtr(&nic.VLANID, unknownInt()))
		}
		if u.mtu[k] {
			out = append(out, childargs.BindPtr(&nic.MTU, unknownInt()))
		}
	}
	if ci := args.CloudInit; ci != nil && (u.dns || u.search) {
		if ci.DNS == nil {
			ci.DNS = &proxmox.VirtualMachineDns{}
		}
		if u.dns {
			out = append(out, childargs.Bind(&ci.DNS.Servers, pulumi.UnsafeUnknownOutput(nil).ApplyT(func(any) []string { return nil }).(pulumi.StringArrayOutput)))
		}
		if u.search {
			out = append(out, childargs.BindPtr(&ci.DNS.Domain, unknownString()))
		}
	}
	return out
}
