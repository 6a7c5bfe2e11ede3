package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/proxmoxtalos/proxmoxtalos/provider/config"
	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

// proxmoxInventory reads through the provider's own Proxmox client (the one
// every resource of this provider process uses).
func proxmoxInventory(ctx context.Context) (Inventory, error) {
	c, err := config.Client(ctx)
	if err != nil {
		return nil, fmt.Errorf("the cluster is planned from what Proxmox reports (free memory per host, the "+
			"cluster's VMs): %w", err)
	}
	return &pveInventory{c: c}, nil
}

type pveInventory struct {
	c *pve.Client
	// inv is the cluster's inventory as Hosts read it: VMs takes the VMs
	// from it, one read of /cluster/resources for both.
	inv *pve.Inventory
}

// Hosts reports each node's free memory: total minus what the host and its
// running guests use, which is what a new VM can still start with (the
// lab and kvm refuse a VM that does not fit). Storages and bridges are left
// out: HostResources reads them for the hosts that need them.
func (i *pveInventory) Hosts(ctx context.Context) (map[string]plan.HostFacts, error) {
	// The inventory first: its node entries are the node list's answer
	// (pve.Client.Inventory), so Nodes needs no request of its own. If it
	// fails, Nodes reads GET /nodes and VMs tries the inventory again.
	if inv, err := i.c.Inventory(ctx, 0); err == nil {
		i.inv = &inv
	}
	nodes, err := i.c.Nodes(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the Proxmox nodes' capacity: %w", err)
	}
	out := map[string]plan.HostFacts{}
	for _, n := range nodes {
		free := int64(0)
		if n.MaxMem > n.Mem {
			free = int64((n.MaxMem - n.Mem) >> 20)
		}
		out[n.Name] = plan.HostFacts{Online: n.Online, FreeMemoryMiB: free, CPUs: n.MaxCPU}
	}
	return out, nil
}

// HostResources adds the storages and bridges of the named online hosts to
// hosts (see hostResourceReader).
func (i *pveInventory) HostResources(ctx context.Context, hosts map[string]plan.HostFacts, names []string) {
	for _, name := range names {
		hf, ok := hosts[name]
		if !ok || !hf.Online || hf.Storages != nil {
			continue
		}
		i.readResources(ctx, name, &hf)
		hosts[name] = hf
	}
}

// readResources lists a host's active storages and its bridges, which the
// plan checks the new VMs' storages and bridges against. A host it cannot
// read them on (an API token without Sys.Audit or Datastore.Audit there,
// which a host the cluster does not use may well lack) is left unchecked:
// the VirtualMachine's own check still runs.
func (i *pveInventory) readResources(ctx context.Context, node string, hf *plan.HostFacts) {
	storages, err := i.c.Storages(ctx, node)
	if err != nil {
		return
	}
	bridges, err := i.c.Bridges(ctx, node)
	if err != nil {
		return
	}
	hf.Storages = map[string][]string{}
	for _, s := range storages {
		if s.Active && s.Enabled {
			hf.Storages[s.Name] = s.Content
		}
	}
	hf.Bridges = bridges
	if hf.Bridges == nil {
		hf.Bridges = []string{}
	}
}

// ReportedHostResources is HostResources with each host's storages taken,
// where it reports any, from the inventory Hosts read (see
// pve.Client.ReportedStorages): no storage list per host. It reports
// whether it took any so; those may miss a storage the host has (one the
// token may only allocate space on, or whose status the inventory does not
// know), so a plan they fail is checked again with HostResources.
func (i *pveInventory) ReportedHostResources(ctx context.Context, hosts map[string]plan.HostFacts, names []string) bool {
	used := false
	for _, name := range names {
		hf, ok := hosts[name]
		if !ok || !hf.Online || hf.Storages != nil {
			continue
		}
		reported, ok := i.c.ReportedStorages(name)
		if !ok {
			i.readResources(ctx, name, &hf)
			hosts[name] = hf
			continue
		}
		bridges, err := i.c.Bridges(ctx, name)
		if err != nil {
			continue
		}
		hf.Storages = map[string][]string{}
		for _, s := range reported {
			hf.Storages[s.Name] = s.Content
		}
		hf.Bridges = bridges
		if hf.Bridges == nil {
			hf.Bridges = []string{}
		}
		hosts[name] = hf
		used = true
	}
	return used
}

// reportedResourceReader is an Inventory that can take the hosts'
// storages from what it already read (ReportedHostResources).
type reportedResourceReader interface {
	ReportedHostResources(ctx context.Context, hosts map[string]plan.HostFacts, names []string) bool
}

// hostResourceReader is an Inventory whose Hosts leave out each host's
// storages and bridges (one or two requests per host), which only new VMs
// are checked against (plan.checkHostResources): planWithHostResources
// reads them for the hosts that get one.
type hostResourceReader interface {
	HostResources(ctx context.Context, hosts map[string]plan.HostFacts, names []string)
}

// planWithHostResources computes the plan, with the storages and bridges of
// the hosts its new VMs go to, read only then: a preview or update of a
// cluster that places no new VM reads none (a 60-node cluster's no-op
// preview read two lists per host). The placement does not depend on them,
// so the plan is computed again with them only to check the new VMs; a plan
// that fails is computed again with every host's, so that its error lists
// every problem, as it did when all were read first. A plan that passes
// takes the storages the inventory reports (ReportedHostResources) without
// a list per host; one that fails with them is checked again with each
// host's list, so that only the host's own answer fails it.
func planWithHostResources(ctx context.Context, pl *planner, inv Inventory, placeholder string, u vmUnknowns) (*plan.Plan, error) {
	rr, lazy := inv.(hostResourceReader)
	p, err := pl.compute(placeholder)
	if !lazy {
		return p, err
	}
	var names []string
	if err != nil {
		names = slices.Sorted(maps.Keys(pl.facts.Hosts))
	} else {
		for _, n := range p.Nodes {
			if !n.Existing && !slices.Contains(names, n.VM.Host) {
				names = append(names, n.VM.Host)
			}
		}
	}
	if len(names) == 0 {
		return p, err
	}
	orig := pl.facts.Hosts
	if er, ok := inv.(reportedResourceReader); ok && err == nil {
		hosts := maps.Clone(orig)
		if er.ReportedHostResources(ctx, hosts, names) {
			pl.facts.Hosts = withoutBridgeCheck(hosts, u)
			if p, err := pl.compute(placeholder); err == nil {
				return p, nil
			}
			// what the inventory reports may miss a storage the host has:
			// a plan it fails is checked against the hosts' own lists
		}
	}
	hosts := maps.Clone(orig)
	rr.HostResources(ctx, hosts, names)
	pl.facts.Hosts = withoutBridgeCheck(hosts, u)
	return pl.compute(placeholder)
}

// VMs reads the configuration of every VM tagged for the cluster. The
// inventory it reads is a fresh one (Hosts' of moments ago, in the same
// Construct); the creates of the run share it to look for the VMs an
// interrupted run left (pve.SettledInventory: unless it shows a VM another
// client was still creating), instead of each reading one more.
func (i *pveInventory) VMs(ctx context.Context, cluster string) ([]plan.ObservedVM, error) {
	var inv pve.Inventory
	if i.inv != nil {
		inv = *i.inv
	} else {
		var err error
		if inv, err = i.c.Inventory(ctx, 0); err != nil {
			return nil, fmt.Errorf("listing the Proxmox cluster's VMs: %w", err)
		}
	}
	var vms []pve.ClusterVM
	for _, g := range inv.Guests {
		if g.Type == "qemu" {
			vms = append(vms, g)
		}
	}
	offline, err := i.offlineHosts(ctx)
	if err != nil {
		return nil, err
	}
	var out []plan.ObservedVM
	for _, vm := range vms {
		if vm.Template || !slices.Contains(vm.Tags, plan.TagClusterPrefix+cluster) {
			continue
		}
		// Its configuration lives on a node that does not answer: reading
		// it would wait for as long as the node is down.
		unknown := plan.ObservedVM{VMID: vm.VMID, Host: vm.Node, Name: vm.Name, Tags: vm.Tags, Status: pve.StatusNodeDown, ConfigUnknown: true}
		if offline[vm.Node] || vm.Status == pve.StatusNodeDown || i.c.Silent(vm.Node) {
			out = append(out, unknown)
			continue
		}
		ref := pve.VMRef{Node: vm.Node, VMID: vm.VMID}
		cfg, err := i.c.VMConfig(ctx, ref)
		if _, silent := pve.NodeSilent(err); silent {
			out = append(out, unknown) // a preview gave up on the node (pve.NodeWait)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading the configuration of %s, a VM of cluster %s: %w", ref, cluster, err)
		}
		o := observeVM(vm.VMID, vm.Node, cfg)
		o.Status, o.Config = vm.Status, cfg
		out = append(out, o)
	}
	return out, nil
}

// offlineHosts are the Proxmox nodes that do not answer: a request for one
// of their VMs goes through pveproxy to them (proxyto node) and fails.
func (i *pveInventory) offlineHosts(ctx context.Context) (map[string]bool, error) {
	nodes, err := i.c.Nodes(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the Proxmox nodes' status: %w", err)
	}
	out := map[string]bool{}
	for _, n := range nodes {
		out[n.Name] = !n.Online
	}
	return out, nil
}

// guestLister is an Inventory that also lists every VM and container of the
// Proxmox cluster, for the checks of pinned VMIDs and templates.
type guestLister interface {
	Guests(ctx context.Context) (map[int]plan.Guest, error)
}

// Guests lists the Proxmox cluster's VMs and containers by VMID.
func (i *pveInventory) Guests(ctx context.Context) (map[int]plan.Guest, error) {
	guests, err := i.c.ClusterGuests(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the Proxmox cluster's VMs and containers: %w", err)
	}
	out := map[int]plan.Guest{}
	for _, g := range guests {
		kind := "VM"
		if g.Type == "lxc" {
			kind = "container"
		}
		out[g.VMID] = plan.Guest{Kind: kind, Name: g.Name, Node: g.Node, Template: g.Template, Tags: g.Tags}
	}
	return out, nil
}

// namesVMIDs reports whether the inputs pin a VMID or clone a template:
// only then are the cluster's guests listed (one more request).
func namesVMIDs(a *TalosClusterArgs) bool {
	if a.Image != nil && a.Image.Template != nil {
		return true
	}
	for _, h := range a.Hosts {
		if h.TemplateVmId != 0 {
			return true
		}
	}
	pinned := func(nodes []NodeSettings) bool {
		for _, n := range nodes {
			if n.VmId != 0 {
				return true
			}
		}
		return false
	}
	if a.ControlPlane != nil && pinned(a.ControlPlane.Nodes) {
		return true
	}
	for _, p := range a.WorkerPools {
		if pinned(p.Nodes) {
			return true
		}
	}
	return false
}
