package cluster

import (
	"fmt"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
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

// downloadProps are the inputs of an ISO download.
func downloadProps(d plan.ISODownload) pulumi.Map {
	return pulumi.Map{
		"node":     pulumi.String(d.Host),
		"storage":  pulumi.String(d.Storage),
		"url":      pulumi.String(d.URL),
		"content":  pulumi.String("iso"),
		"fileName": pulumi.String(d.FileName),
		// The name says what the file holds (plan.ISOFileName): another
		// cluster or stack with the same version and schematic on this
		// storage uses the same file, kept until no VM boots from it.
		"shared": pulumi.Bool(true),
	}
}

// vmProps are the inputs of a node's VM. iso is the volume of the host's
// ISO download (nil when the VM is a clone).
func vmProps(cluster string, n *plan.Node, iso pulumi.StringInput) pulumi.Map {
	vm := &n.VM
	bus := strings.TrimRight(vm.OSDisk.Interface, "0123456789")
	props := pulumi.Map{
		"node": pulumi.String(vm.Host),
		"name": pulumi.String(vm.Name),
		"description": pulumi.String(fmt.Sprintf("Talos %s node %s of cluster %s, managed by Pulumi "+
			"(proxmoxtalos TalosCluster). Changes made here are reverted by the next pulumi up.", n.Role, n.Name, cluster)),
		"tags":   pulumi.ToStringArray(vm.Tags),
		"osType": pulumi.String("l26"),
		"cpu": pulumi.Map{
			"cores":   pulumi.Int(vm.Cores),
			"sockets": pulumi.Int(vm.Sockets),
			"type":    pulumi.String(vm.CPUType),
		},
		// Dedicated memory without a balloon: Talos (and the kubelet's
		// memory accounting) expect the memory they boot with.
		"memory":         pulumi.Map{"dedicated": pulumi.Int(vm.MemoryMiB), "floating": pulumi.Int(0)},
		"disks":          diskProps(bus, vm),
		"networkDevices": nicProps(vm.NICs),
		"cloudInit":      cloudInitProps(vm),
		"agent":          pulumi.Map{"enabled": pulumi.Bool(vm.Agent), "waitForAddress": pulumi.Bool(false)},
		"onBoot":         pulumi.Bool(vm.OnBoot),
		"started":        pulumi.Bool(true),
		// A node leaves the cluster (graceful Talos reset, which powers it
		// off) before its VM is destroyed: no graceful shutdown to wait for.
		"stopOnDestroy": pulumi.Bool(true),
	}
	if bus == "scsi" {
		props["scsiHardware"] = pulumi.String("virtio-scsi-single")
	}
	if vm.VMIDPinned {
		props["vmId"] = pulumi.Int(vm.VMID)
	}
	if vm.Boot.CloneVMID != 0 {
		props["clone"] = pulumi.Map{
			"vmId": pulumi.Int(vm.Boot.CloneVMID),
			"node": pulumi.String(vm.Boot.CloneNode),
			"full": pulumi.Bool(vm.Boot.FullClone),
		}
	} else if iso != nil {
		props["iso"] = iso
	}
	return props
}

func diskProps(bus string, vm *plan.VM) pulumi.Array {
	disk := func(d plan.Disk) pulumi.Map {
		m := pulumi.Map{
			"interface": pulumi.String(d.Interface),
			"storage":   pulumi.String(d.Storage),
			"size":      pulumi.Int(d.SizeGiB),
			"discard":   pulumi.Bool(true),
		}
		if bus != "virtio" {
			m["ssd"] = pulumi.Bool(true)
		}
		if bus != "sata" {
			m["iothread"] = pulumi.Bool(true)
		}
		return m
	}
	out := pulumi.Array{disk(vm.OSDisk)}
	for _, d := range vm.DataDisks {
		out = append(out, disk(d))
	}
	return out
}

func nicProps(nics []plan.NICConfig) pulumi.Array {
	var out pulumi.Array
	for _, n := range nics {
		m := pulumi.Map{
			"bridge":     pulumi.String(n.Bridge),
			"model":      pulumi.String("virtio"),
			"macAddress": pulumi.String(n.MAC),
		}
		if n.VLAN != 0 {
			m["vlanId"] = pulumi.Int(n.VLAN)
		}
		if n.MTU != 0 {
			m["mtu"] = pulumi.Int(n.MTU)
		}
		out = append(out, m)
	}
	return out
}

func cloudInitProps(vm *plan.VM) pulumi.Map {
	var ips pulumi.Array
	for _, n := range vm.NICs {
		ipv4 := pulumi.Map{"address": pulumi.String("dhcp")}
		if n.Address != "" {
			ipv4 = pulumi.Map{"address": pulumi.String(n.Address)}
			if n.Gateway != "" {
				ipv4["gateway"] = pulumi.String(n.Gateway)
			}
		}
		ips = append(ips, pulumi.Map{"ipv4": ipv4})
	}
	ci := pulumi.Map{
		"storage":   pulumi.String(vm.OSDisk.Storage),
		"ipConfigs": ips,
	}
	if len(vm.DNSServers) > 0 || vm.SearchDomain != "" {
		dns := pulumi.Map{}
		if len(vm.DNSServers) > 0 {
			dns["servers"] = pulumi.ToStringArray(vm.DNSServers)
		}
		if vm.SearchDomain != "" {
			dns["domain"] = pulumi.String(vm.SearchDomain)
		}
		ci["dns"] = dns
	}
	return ci
}

// vmSettings are the VM settings that restart it when they change, for
// the node's health gate: a change re-checks the cluster after the VM
// restarted, before the next node's VM restarts.
func vmSettings(ns *plan.NodeState) string {
	return fmt.Sprintf("cores=%d sockets=%d cpu=%s memory=%dMiB cloudInit=%s", ns.Cores, ns.Sockets, ns.CPUType, ns.MemoryMiB, ns.CloudInit)
}
