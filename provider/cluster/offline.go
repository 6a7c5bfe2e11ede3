package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/provider/config"
	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
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
}

// stateReader reads the stack's state; nil asks the engine. Tests set it.
type stateReader func(ctx *pulumi.Context) (map[string]any, error)

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
		return nil, fmt.Errorf("reading the state of stack %s for the offline preview: %w", stack, err)
	}
	return out.Outputs, nil
}

// newStackState picks the cluster's VMs and node applies out of the stack's
// resources (URN -> {type, outputs}).
func newStackState(resources map[string]any, cluster string) *stackState {
	s := &stackState{running: map[string]runningNode{}}
	for _, urn := range slices.Sorted(maps.Keys(resources)) {
		r, _ := resources[urn].(map[string]any)
		outs, _ := r["outputs"].(map[string]any)
		if !strings.Contains(urn, "proxmoxtalos:index:TalosCluster$") || outs == nil {
			continue
		}
		switch r["type"] {
		case tokenVirtualMachine:
			if vm := observeState(outs); slices.Contains(vm.Tags, plan.TagClusterPrefix+cluster) && !vm.Template {
				s.vms = append(s.vms, vm)
			}
		case tokenConfigurationApply:
			if node := str(outs["node"]); node != "" {
				s.running[node] = runningNode{Config: str(outs["machineConfiguration"]), TalosVersion: str(outs["runningVersion"])}
			}
		}
	}
	return s
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
func observeState(o map[string]any) plan.ObservedVM {
	vm := plan.ObservedVM{
		VMID: num(o["vmId"], 0), Host: str(o["node"]), Name: str(o["name"]), Tags: pveTags(stringList(o["tags"])),
		Template: o["template"] == true, Status: str(o["status"]),
		Cores: 1, Sockets: 1, CPUType: "kvm64", MemoryMiB: 512, // pve-api defaults, as observeVM
	}
	if cpu := obj(o["cpu"]); cpu != nil {
		vm.Cores, vm.Sockets = num(cpu["cores"], 1), num(cpu["sockets"], 1)
		if t := str(cpu["type"]); t != "" {
			vm.CPUType = t
		}
	}
	if m := obj(o["memory"]); m != nil {
		vm.MemoryMiB = num(m["dedicated"], 512)
	}
	for _, d := range list(o["disks"]) {
		d := obj(d)
		vm.Disks = append(vm.Disks, plan.Disk{Interface: str(d["interface"]), Storage: str(d["storage"]), SizeGiB: num(d["size"], 0)})
	}
	if iso := str(o["iso"]); iso != "" {
		vm.ISOVolume = iso
		vm.ISOStorage, _, _ = strings.Cut(iso, ":")
	}
	ci := obj(o["cloudInit"])
	ips := list(ci["ipConfigs"])
	macs := stringList(o["macAddresses"])
	for i, d := range list(o["networkDevices"]) {
		d := obj(d)
		n := plan.NICConfig{Bridge: str(d["bridge"]), VLAN: num(d["vlanId"], 0), MTU: num(d["mtu"], 0), MAC: strings.ToUpper(str(d["macAddress"]))}
		if n.MAC == "" && i < len(macs) {
			n.MAC = strings.ToUpper(macs[i])
		}
		if i < len(ips) {
			if v4 := obj(obj(ips[i])["ipv4"]); v4 != nil && str(v4["address"]) != "dhcp" {
				n.Address, n.Gateway = str(v4["address"]), str(v4["gateway"])
			}
		}
		vm.NICs = append(vm.NICs, n)
	}
	if dns := obj(ci["dns"]); dns != nil {
		if servers := stringList(dns["servers"]); len(servers) > 0 {
			vm.DNSServers = servers
		}
		vm.SearchDomain = str(dns["domain"])
	}
	return vm
}

// pveTags are tags as Proxmox keeps them: lower case, sorted.
func pveTags(tags []string) []string {
	for i, t := range tags {
		tags[i] = strings.ToLower(t)
	}
	slices.Sort(tags)
	return tags
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func stringList(v any) []string {
	var out []string
	for _, e := range list(v) {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// num reads a number (JSON numbers arrive as float64).
func num(v any, def int) int {
	switch n := v.(type) {
	case float64:
		return int(n)
	case int:
		return n
	}
	return def
}
