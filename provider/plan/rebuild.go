package plan

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Tags the plan puts on every VM. Rebuild reads them back: they are how the
// component finds its VMs and their identity in Proxmox.
const (
	TagManaged       = "proxmoxtalos"
	TagClusterPrefix = "cluster-"
	TagPoolPrefix    = "pool-"
)

// ObservedVM is what Proxmox says about one VM, already parsed from its
// configuration (the component reads it; this package does no I/O).
type ObservedVM struct {
	VMID int
	// Host is the Proxmox node the VM is on.
	Host string
	Name string
	// Tags are the VM's tags but the VirtualMachine provider's own.
	Tags []string
	// OnBoot and Agent are the VM's onboot and agent settings (pve-api
	// default off for both).
	OnBoot, Agent bool
	// Template is true for a VM template (never a cluster node).
	Template  bool
	Cores     int
	Sockets   int
	CPUType   string
	MemoryMiB int
	// Disks are the VM's hard disks (no CD-ROM, no cloud-init drive).
	Disks []Disk
	// ISOStorage is the storage of the ISO in the CD drive, "" when none;
	// ISOVolume the whole volume ID ("local:iso/talos-....iso").
	ISOStorage string
	ISOVolume  string
	// NICs in order (net0 first), with the cloud-init address of each
	// ("" for DHCP) and gateway.
	NICs         []NICConfig
	DNSServers   []string
	SearchDomain string
	// Status is the VM's status as Proxmox lists it ("running",
	// "stopped", ...; "unknown" when its node is offline).
	Status string
	// Unfinished: the stack's state says the VM's last create or update
	// failed part-way (an offline preview's VM only), so its status is not
	// known; its host is not offline for that.
	Unfinished bool
	// ConfigUnknown: the VM's configuration could not be read (its node
	// is offline): only what the cluster's resource list says is known
	// (VMID, host, name, tags, status).
	ConfigUnknown bool
	// Config is the VM's configuration as Proxmox answered it (nil when it
	// was not read: an offline preview, a node that does not answer), for
	// the component to tell whether its VM step would change anything.
	Config map[string]string
}

// Rebuild reconstructs the State of cluster from the VMs Proxmox holds, for
// a component that keeps no state of its own between runs. VMs are the
// cluster's when they carry the managed and cluster tags. What Proxmox
// cannot tell is left empty, and Compare does not count it as a change: the
// clone source of a cloned VM, the machine configuration inputs (they live
// in the nodes' secret configurations), the bootstrap node, and the Talos
// and Kubernetes versions and schematic (the nodes know what they run; the
// component asks them). Warnings explain VMs that
// carry the cluster's tags but cannot be one of its nodes.
func Rebuild(cluster string, vms []ObservedVM) (*State, []string) {
	st := &State{Version: StateVersion, Cluster: cluster, Nodes: []NodeState{}}
	var warnings []string
	byName := map[string]int{}
	sorted := slices.Clone(vms)
	slices.SortFunc(sorted, func(a, b ObservedVM) int { return a.VMID - b.VMID })
	for _, vm := range sorted {
		if vm.Template || !slices.Contains(vm.Tags, TagManaged) || !slices.Contains(vm.Tags, TagClusterPrefix+cluster) {
			continue
		}
		ns, err := rebuildNode(cluster, vm)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("VM %d (%s) on %s has the tags of cluster %s but %v: it is not treated as a node of the cluster", vm.VMID, vm.Name, vm.Host, cluster, err))
			continue
		}
		if i, dup := byName[ns.Name]; dup {
			warnings = append(warnings, fmt.Sprintf("VMs %d and %d are both node %s of cluster %s: VM %d is kept, remove the other one or its tags", st.Nodes[i].VMID, vm.VMID, ns.Name, cluster, st.Nodes[i].VMID))
			continue
		}
		byName[ns.Name] = len(st.Nodes)
		st.Nodes = append(st.Nodes, ns)
	}
	// Canonical order, as a plan lists its nodes: control planes, then
	// workers by pool, each by ordinal (then name).
	slices.SortStableFunc(st.Nodes, func(a, b NodeState) int {
		switch {
		case a.Role != b.Role && a.Role == RoleControlPlane:
			return -1
		case a.Role != b.Role:
			return 1
		case a.Pool != b.Pool:
			return cmpString(a.Pool, b.Pool)
		case a.Ordinal != b.Ordinal:
			return a.Ordinal - b.Ordinal
		}
		return cmpString(a.Name, b.Name)
	})
	return st, warnings
}

func rebuildNode(cluster string, vm ObservedVM) (NodeState, error) {
	ns := NodeState{
		Name: vm.Name, Host: vm.Host, VMID: vm.VMID, Power: powerOf(vm.Status), Unfinished: vm.Unfinished,
		Cores: vm.Cores, Sockets: vm.Sockets, CPUType: vm.CPUType, MemoryMiB: vm.MemoryMiB,
	}
	if ns.Name == "" {
		return ns, fmt.Errorf("has no name")
	}
	switch {
	case slices.Contains(vm.Tags, string(RoleControlPlane)):
		ns.Role, ns.Pool = RoleControlPlane, ControlPlanePool
	case slices.Contains(vm.Tags, string(RoleWorker)):
		ns.Role = RoleWorker
	default:
		return ns, fmt.Errorf("has neither the %q nor the %q tag", RoleControlPlane, RoleWorker)
	}
	for _, t := range vm.Tags {
		if ns.Role == RoleWorker && strings.HasPrefix(t, TagPoolPrefix) {
			ns.Pool = strings.TrimPrefix(t, TagPoolPrefix)
		}
	}
	if ns.Pool == "" {
		return ns, fmt.Errorf("is a worker without a %s<name> tag", TagPoolPrefix)
	}
	ns.Ordinal = ordinalOf(cluster, ns.Pool, ns.Name)
	if vm.Unfinished {
		// Taken as running, as the update that runs the operation again
		// leaves it: it is planned, checked and counted for etcd as such,
		// and PowerNotes says its operation did not finish.
		ns.Power = PowerRunning
	}
	if vm.ConfigUnknown {
		// Only its identity: what Compare does not know is no change,
		// and its address comes from the cluster (Facts.Membership).
		return ns, nil
	}

	if len(vm.NICs) == 0 || addressOnly(vm.NICs[0].Address) == "" {
		return ns, fmt.Errorf("has no static cloud-init address on net0")
	}
	ns.Address = addressOnly(vm.NICs[0].Address)
	ns.Tags, ns.OnBoot, ns.Agent = TagList(vm.Tags), &vm.OnBoot, &vm.Agent
	ns.MAC = strings.ToUpper(vm.NICs[0].MAC)
	if len(vm.NICs) > 1 {
		ns.SecondaryAddress = addressOnly(vm.NICs[1].Address)
	}
	nics := slices.Clone(vm.NICs)
	for i := range nics {
		nics[i].MAC = strings.ToUpper(nics[i].MAC)
	}
	dns := vm.DNSServers
	if dns == nil {
		dns = []string{}
	}
	ns.NICs = fingerprint(nicHardware(nics))
	ns.CloudInit = fingerprint([]any{nicAddresses(nics), dns, vm.SearchDomain})

	os, data := splitDisks(vm.Disks)
	if os == nil {
		return ns, fmt.Errorf("has no OS disk (scsi0, virtio0 or sata0)")
	}
	ns.DiskInterface, ns.DiskGiB, ns.DiskStorage = os.Interface, os.SizeGiB, os.Storage
	for _, d := range data {
		ns.DataDisks = append(ns.DataDisks, dataDiskKey(d))
	}
	if vm.ISOStorage != "" {
		ns.Boot = "iso:" + vm.ISOStorage
		ns.ISO = vm.ISOVolume
	}
	return ns, nil
}

// splitDisks picks the OS disk (index 0 of scsi, virtio or sata, in that
// order) and returns the others sorted by interface.
func splitDisks(disks []Disk) (*Disk, []Disk) {
	var os *Disk
	for _, bus := range []string{"scsi", "virtio", "sata"} {
		if i := slices.IndexFunc(disks, func(d Disk) bool { return d.Interface == bus+"0" }); i >= 0 {
			os = &disks[i]
			break
		}
	}
	var data []Disk
	for _, d := range disks {
		if os == nil || d.Interface != os.Interface {
			data = append(data, d)
		}
	}
	slices.SortFunc(data, func(a, b Disk) int { return diskOrder(a.Interface) - diskOrder(b.Interface) })
	return os, data
}

// diskOrder sorts interfaces by bus, then numerically (scsi2 before scsi10).
func diskOrder(iface string) int {
	for bi, bus := range []string{"scsi", "virtio", "sata", "ide"} {
		if n, err := strconv.Atoi(strings.TrimPrefix(iface, bus)); err == nil && strings.HasPrefix(iface, bus) {
			return bi*1000 + n
		}
	}
	return 1 << 20
}

// ordinalOf is n for a node named <cluster>-<pool>-<n>, else 0.
func ordinalOf(cluster, pool, name string) int {
	prefix := cluster + "-" + pool + "-"
	if !strings.HasPrefix(name, prefix) {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimPrefix(name, prefix))
	if err != nil || n < 1 || defaultNodeName(cluster, pool, n) != name {
		return 0
	}
	return n
}
