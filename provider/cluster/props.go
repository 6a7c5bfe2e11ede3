package cluster

import (
	"fmt"
	"strings"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/proxmox"
)

// isoResourceName names an ISO download after its host and what it holds
// ("demo-iso-pve1-v1.12.5-ce4c980550dd"), so that each version or schematic
// is a resource of its own that stays while a node boots from it; the
// storage is added when it is not the default.
func isoResourceName(cluster string, d plan.ISODownload) string {
	name := cluster + "-iso-" + d.Host
	if version, schematic, _, ok := plan.ParseISOFileName(d.FileName); ok {
		name += "-" + version + "-" + schematic
	} else {
		name += "-" + strings.TrimSuffix(d.FileName, ".iso")
	}
	if d.Storage != plan.DefaultISOStorage {
		name += "-" + d.Storage
	}
	return name
}

// downloadArgs are the inputs of an ISO download.
func downloadArgs(d plan.ISODownload) *proxmox.DownloadFileArgs {
	return &proxmox.DownloadFileArgs{
		Node:     d.Host,
		Storage:  d.Storage,
		URL:      d.URL,
		Content:  ptr(proxmox.DownloadContent("iso")),
		FileName: ptr(d.FileName),
		// The name says what the file holds (plan.ISOFileName): another
		// cluster or stack with the same version and schematic on this
		// storage uses the same file, kept until no VM boots from it.
		Shared: ptr(true),
	}
}

// vmArgs are the inputs of a node's VM, but for its ISO (the volume of the
// host's ISO download, an output: fanout.vm binds it).
func vmArgs(cluster string, n *plan.Node) *proxmox.VirtualMachineArgs {
	vm := &n.VM
	bus := strings.TrimRight(vm.OSDisk.Interface, "0123456789")
	args := &proxmox.VirtualMachineArgs{
		Node: vm.Host,
		Name: ptr(vm.Name),
		Description: ptr(fmt.Sprintf("Talos %s node %s of cluster %s, managed by Pulumi "+
			"(proxmoxtalos TalosCluster). Changes made here are reverted by the next pulumi up.", n.Role, n.Name, cluster)),
		Tags:   nonNil(vm.Tags),
		OsType: ptr(proxmox.OsType("l26")),
		CPU:    &proxmox.VirtualMachineCpu{Cores: ptr(vm.Cores), Sockets: ptr(vm.Sockets), Type: ptr(vm.CPUType)},
		// Dedicated memory without a balloon: Talos (and the kubelet's
		// memory accounting) expect the memory they boot with.
		Memory:         &proxmox.VirtualMachineMemory{Dedicated: vm.MemoryMiB, Floating: ptr(0)},
		Disks:          diskArgs(bus, vm),
		NetworkDevices: nicArgs(vm.NICs),
		CloudInit:      cloudInitArgs(vm),
		Agent:          &proxmox.VirtualMachineAgent{Enabled: ptr(vm.Agent), WaitForAddress: ptr(false)},
		OnBoot:         ptr(vm.OnBoot),
		Started:        ptr(true),
		// A node leaves the cluster (graceful Talos reset, which powers it
		// off) before its VM is destroyed: no graceful shutdown to wait for.
		StopOnDestroy: ptr(true),
	}
	if bus == "scsi" {
		args.ScsiHardware = ptr(proxmox.ScsiHardware("virtio-scsi-single"))
	}
	if vm.VMIDPinned {
		args.VMID = ptr(vm.VMID)
	}
	if vm.Boot.CloneVMID != 0 {
		args.Clone = &proxmox.VirtualMachineClone{VMID: vm.Boot.CloneVMID, Node: ptr(vm.Boot.CloneNode), Full: ptr(vm.Boot.FullClone)}
	}
	return args
}

func diskArgs(bus string, vm *plan.VM) []proxmox.VirtualMachineDisk {
	disk := func(d plan.Disk) proxmox.VirtualMachineDisk {
		out := proxmox.VirtualMachineDisk{Interface: d.Interface, Storage: d.Storage, Size: d.SizeGiB, Discard: ptr(true)}
		if bus != "virtio" {
			out.SSD = ptr(true)
		}
		if bus != "sata" {
			out.IOThread = ptr(true)
		}
		return out
	}
	out := []proxmox.VirtualMachineDisk{disk(vm.OSDisk)}
	for _, d := range vm.DataDisks {
		out = append(out, disk(d))
	}
	return out
}

func nicArgs(nics []plan.NICConfig) []proxmox.VirtualMachineNetworkDevice {
	var out []proxmox.VirtualMachineNetworkDevice
	for _, n := range nics {
		d := proxmox.VirtualMachineNetworkDevice{Bridge: n.Bridge, Model: ptr(proxmox.NetworkModel("virtio")), MACAddress: ptr(n.MAC)}
		if n.VLAN != 0 {
			d.VLANID = ptr(n.VLAN)
		}
		if n.MTU != 0 {
			d.MTU = ptr(n.MTU)
		}
		out = append(out, d)
	}
	return out
}

func cloudInitArgs(vm *plan.VM) *proxmox.VirtualMachineCloudInit {
	ci := &proxmox.VirtualMachineCloudInit{Storage: vm.OSDisk.Storage}
	for _, n := range vm.NICs {
		ipv4 := &proxmox.VirtualMachineIpAddress{Address: "dhcp"}
		if n.Address != "" {
			ipv4 = &proxmox.VirtualMachineIpAddress{Address: n.Address}
			if n.Gateway != "" {
				ipv4.Gateway = ptr(n.Gateway)
			}
		}
		ci.IPConfigs = append(ci.IPConfigs, proxmox.VirtualMachineIpConfig{IPv4: ipv4})
	}
	if len(vm.DNSServers) > 0 || vm.SearchDomain != "" {
		ci.DNS = &proxmox.VirtualMachineDns{}
		if len(vm.DNSServers) > 0 {
			ci.DNS.Servers = vm.DNSServers
		}
		if vm.SearchDomain != "" {
			ci.DNS.Domain = ptr(vm.SearchDomain)
		}
	}
	return ci
}

func ptr[T any](v T) *T { return &v }

// nonNil is s, or an empty list for nil: an optional list the component
// always sets (so that its inputs stay as they were recorded).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// vmSettings are the VM settings whose change the node's health gate
// follows (healthGate.vm): those that restart the VM, the OS disk's size
// (the VM's update grows it live: qemu-server resize) and storage (the
// cloud-init drive's too: cloudInitArgs), to which the update moves the
// disk live, the heaviest I/O the node sees, and the data disks
// (interface:GiB:storage each, plan.NodeState): added or removed live on
// scsi and virtio, at a restart on sata (plan restartReasons), moved or
// grown live on any bus. Always set, "" without any: a first disk is then
// a change. A change re-checks the cluster after the node's VM changed,
// before the next node's VM changes. A key added here is no change for a
// gate stored without it (talos vmChanged).
func vmSettings(ns *plan.NodeState) string {
	return fmt.Sprintf("cores=%d sockets=%d cpu=%s memory=%dMiB cloudInit=%s diskSize=%dGiB diskStorage=%s dataDisks=%s",
		ns.Cores, ns.Sockets, ns.CPUType, ns.MemoryMiB, ns.CloudInit, ns.DiskGiB, ns.DiskStorage, strings.Join(ns.DataDisks, ","))
}
