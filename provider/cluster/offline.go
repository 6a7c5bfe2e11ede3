package cluster

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/provider/childargs"
	"github.com/proxmoxtalos/proxmoxtalos/provider/config"
	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/proxmox"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talos"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
)

// An offline preview (config.Offline) plans the cluster from the stack's
// state instead of Proxmox and the nodes: the VMs the last update left (the
// VirtualMachine resources' outputs) stand in for the tagged VMs Proxmox
// lists, and each node's ConfigurationApply outputs (the configuration it
// was given, the Talos version it ran) for what the node answers. Without
// drift that is what Proxmox and the nodes would say, so the preview is the
// same; what it cannot see is said in one warning per check (offlineChecks).

// offlineChecks are the checks an offline preview of a TalosCluster skips,
// said once on the component for all of its resources.
var offlineChecks = []config.Check{
	config.CheckClusterVMs, config.CheckDrift, config.CheckCapacity, config.CheckNodes,
	config.CheckPrivileges, config.CheckInventory,
}

const (
	// readStackResourceOutputs is the engine's built-in function that
	// returns every resource of a stack with its outputs, from the last
	// checkpoint (pulumi/pkg resource/deploy/builtins.go; the Node.js SDK's
	// StackReference uses it too).
	readStackResourceOutputs = "pulumi:pulumi:readStackResourceOutputs"
)

// isOffline reports whether this is an offline preview (config.Offline
// unless a test says).
func (c *Component) isOffline() bool {
	if c.offline != nil {
		return c.offline()
	}
	return config.Offline()
}

// offlineWarnings puts a warning per skipped check first, in place of the
// plan's own note that it had no host facts.
func offlineWarnings(warnings []string) []string {
	out := make([]string, 0, len(offlineChecks)+len(warnings))
	for _, c := range offlineChecks {
		out = append(out, c.Warning())
	}
	for _, w := range warnings {
		if !strings.HasPrefix(w, plan.NoHostFactsWarning) {
			out = append(out, w)
		}
	}
	return out
}

// stackState is what the last update of this stack left: the component's
// Inventory (hosts unknown: no capacity check) and what its nodes run.
type stackState struct {
	vms     []plan.ObservedVM
	running map[string]runningNode // by node address
	// applied are the nodes with a ConfigurationApply, by node name (the
	// apply's resource name: fanout.apply registers it under the node's).
	applied map[string]appliedNode
}

// appliedNode is what a node's ConfigurationApply in the state says of it.
type appliedNode struct {
	address string
	// config is the configuration the apply gave the node (or a refresh
	// found it running): its Talos API CA tells this cluster's node from
	// another TalosCluster's of the same name in the same stack. (The
	// apply's clientConfiguration, which said the same, is no longer in its
	// state: talos.StateCopies.)
	config string
	// gateVM is the healthGate.vm of the apply's last create or update.
	gateVM string
}

// issuedBy reports whether the node's configuration trusts ca, the
// cluster's client CA (PEM) its client certificate is issued by.
func (a appliedNode) issuedBy(ca []byte) bool {
	return sameCertificate(talosapi.ConfigIssuingCA([]byte(a.config)), ca)
}

// sameCertificate compares two PEM certificates by their first block's
// DER, so that line endings and trailing text do not matter.
func sameCertificate(a, b []byte) bool {
	pa, _ := pem.Decode(a)
	pb, _ := pem.Decode(b)
	return pa != nil && pb != nil && bytes.Equal(pa.Bytes, pb.Bytes)
}

// stateReader reads the stack's state; nil asks the engine. Tests set it.
type stateReader func(ctx *pulumi.Context) (map[string]any, error)

// readState reads the stack's state: through the test's reader when one is
// set, else from the engine (readStack).
func (c *Component) readState(ctx *pulumi.Context) (map[string]any, error) {
	if c.stack != nil {
		return c.stack(ctx)
	}
	return readStack(ctx)
}

// readStack asks the engine for the stack's resources and their outputs.
// Secret outputs come back as plain values: they stay in this process.
func readStack(ctx *pulumi.Context) (map[string]any, error) {
	stack := ctx.Stack()
	if ctx.Organization() != "" {
		stack = ctx.Organization() + "/" + ctx.Project() + "/" + ctx.Stack()
	}
	var out struct {
		Outputs map[string]any `pulumi:"outputs"`
	}
	if _, err := ctx.InvokePackageRaw(readStackResourceOutputs, map[string]any{"stackName": stack}, &out, ""); err != nil {
		return nil, fmt.Errorf("reading the state of stack %s: %w", stack, err)
	}
	return out.Outputs, nil
}

// newStackState is the offline preview's inventory: the cluster's VMs and
// node applies in the stack's state (collectStackState).
func newStackState(resources map[string]any, cluster string) (*stackState, error) {
	s, err := collectStackState(resources, cluster, "for the offline preview")
	if err != nil {
		return nil, fmt.Errorf("%w; an online preview reads the cluster from Proxmox and its nodes instead", err)
	}
	return s, nil
}

// collectStackState picks the cluster's VMs and node applies out of the
// stack's resources (URN -> {type, outputs}), read into their State types.
// purpose says in an error what they were read for, in the user's terms.
func collectStackState(resources map[string]any, cluster, purpose string) (*stackState, error) {
	s := &stackState{running: map[string]runningNode{}, applied: map[string]appliedNode{}}
	for _, urn := range slices.Sorted(maps.Keys(resources)) {
		r, _ := resources[urn].(map[string]any)
		outs, _ := r["outputs"].(map[string]any)
		if !strings.Contains(urn, "proxmoxtalos:index:TalosCluster$") || outs == nil {
			continue
		}
		switch r["type"] {
		case tokenVirtualMachine:
			var st proxmox.VirtualMachineState
			if err := decodeState(urn, outs, &st, purpose); err != nil {
				return nil, err
			}
			if vm := observeState(&st); slices.Contains(vm.Tags, plan.TagClusterPrefix+cluster) && !vm.Template {
				s.vms = append(s.vms, vm)
			}
		case tokenConfigurationApply:
			var st talos.ConfigurationApplyState
			if err := decodeState(urn, outs, &st, purpose); err != nil {
				return nil, err
			}
			if st.Node != "" {
				s.running[st.Node] = runningNode{Config: st.MachineConfiguration, TalosVersion: st.RunningVersion}
				a := appliedNode{address: st.Node, config: st.MachineConfiguration}
				if g := st.HealthGate; g != nil && g.Vm != nil {
					a.gateVM = *g.Vm
				}
				s.applied[resource.URN(urn).Name()] = a
			}
		}
	}
	return s, nil
}

// decodeState reads a child's outputs into its State type.
func decodeState(urn string, outs map[string]any, st any, purpose string) error {
	if err := childargs.Decode(outs, st); err != nil {
		return fmt.Errorf("reading %s from the stack's state %s: %w", urn, purpose, err)
	}
	return nil
}

// Hosts: unknown offline (nil: the plan checks no capacity).
func (s *stackState) Hosts(context.Context) (map[string]plan.HostFacts, error) { return nil, nil }

// VMs are the cluster's VMs in the stack's state.
func (s *stackState) VMs(context.Context, string) ([]plan.ObservedVM, error) { return s.vms, nil }

// readConfig answers for a node what its ConfigurationApply last left; a
// node without one was never configured (maintenance mode: empty).
func (s *stackState) readConfig(_ context.Context, node string, _ *talosapi.Credentials) (runningNode, error) {
	return s.running[node], nil
}

// observeState is observeVM for a VirtualMachine's outputs (the inputs it
// was given and what it reported): Proxmox's defaults where an input was
// not given, as observeVM applies them to a configuration without the key.
// A clone's template disks that the inputs do not list are not in them.
// The status is the stored one: the state does not know whether a VM runs
// now (the preview warns that drift is not checked).
func observeState(o *proxmox.VirtualMachineState) plan.ObservedVM {
	vm := plan.ObservedVM{
		VMID: o.VMID, Host: o.Node, Name: orZero(o.Name), Tags: pveTags(slices.Clone(o.Tags)),
		Template: orZero(o.Template), Status: o.Status,
		Cores: 1, Sockets: 1, CPUType: "kvm64", MemoryMiB: 512, // pve-api defaults, as observeVM
	}
	if o.Status == proxmox.StatusUnfinished {
		// the status of a VM whose last operation failed part-way, not
		// Proxmox's word for a guest of an offline node
		vm.Status, vm.Unfinished = "", true
	}
	if cpu := o.CPU; cpu != nil {
		vm.Cores, vm.Sockets = valueOr(cpu.Cores, 1), valueOr(cpu.Sockets, 1)
		if t := orZero(cpu.Type); t != "" {
			vm.CPUType = t
		}
	}
	if o.Memory != nil {
		vm.MemoryMiB = o.Memory.Dedicated
	}
	// pve-api defaults: onboot and agent off; an agent block is on unless
	// it says enabled: false
	vm.OnBoot = orZero(o.OnBoot)
	vm.Agent = o.Agent != nil && valueOr(o.Agent.Enabled, true)
	for _, d := range o.Disks {
		vm.Disks = append(vm.Disks, plan.Disk{Interface: d.Interface, Storage: d.Storage, SizeGiB: d.Size})
	}
	if iso := orZero(o.ISO); iso != "" {
		vm.ISOVolume = iso
		vm.ISOStorage, _, _ = strings.Cut(iso, ":")
	}
	var ips []proxmox.VirtualMachineIpConfig
	if o.CloudInit != nil {
		ips = o.CloudInit.IPConfigs
	}
	for i, d := range o.NetworkDevices {
		n := plan.NICConfig{Bridge: d.Bridge, VLAN: orZero(d.VLANID), MTU: orZero(d.MTU), MAC: strings.ToUpper(orZero(d.MACAddress))}
		if n.MAC == "" && i < len(o.MACAddresses) {
			n.MAC = strings.ToUpper(o.MACAddresses[i])
		}
		if i < len(ips) {
			if v4 := ips[i].IPv4; v4 != nil && v4.Address != "dhcp" {
				n.Address, n.Gateway = v4.Address, orZero(v4.Gateway)
			}
		}
		vm.NICs = append(vm.NICs, n)
	}
	if o.CloudInit != nil && o.CloudInit.DNS != nil {
		if servers := o.CloudInit.DNS.Servers; len(servers) > 0 {
			vm.DNSServers = servers
		}
		vm.SearchDomain = orZero(o.CloudInit.DNS.Domain)
	}
	return vm
}

// orZero is *p, or the zero value for nil.
func orZero[T any](p *T) T {
	var zero T
	return valueOr(p, zero)
}

// valueOr is *p, or def for nil.
func valueOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// pveTags are tags as Proxmox keeps them: lower case, sorted.
func pveTags(tags []string) []string {
	for i, t := range tags {
		tags[i] = strings.ToLower(t)
	}
	slices.Sort(tags)
	return tags
}
