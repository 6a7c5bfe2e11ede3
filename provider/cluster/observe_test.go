package cluster

import (
	"slices"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
)

// A VM configuration as Proxmox returns it for a node the component made.
func TestObserveVM(t *testing.T) {
	t.Parallel()
	vm := observeVM(104, "pve2", map[string]string{
		"name":         "lab-workers-1",
		"tags":         "cluster-lab;k8s-v1.35.0;pool-workers;proxmoxtalos;ptid-0123456789abcdef;schematic-ce4c980550dd;talos-v1.12.5;worker",
		"onboot":       "1",
		"agent":        "enabled=1,fstrim_cloned_disks=1",
		"cores":        "4",
		"sockets":      "1",
		"cpu":          "x86-64-v2-AES",
		"memory":       "8192",
		"balloon":      "0",
		"scsihw":       "virtio-scsi-single",
		"scsi0":        "local-lvm:vm-104-disk-0,discard=on,iothread=1,size=20G,ssd=1",
		"scsi1":        "ceph:vm-104-disk-1,size=512M",
		"ide0":         "local-lvm:vm-104-cloudinit,media=cdrom",
		"ide2":         "local:iso/talos-v1.12.5-ce4c980550dd-nocloud-amd64.iso,media=cdrom",
		"net0":         "virtio=02:AB:CD:EF:01:02,bridge=vmbr0,tag=20,mtu=9000",
		"net1":         "virtio=02:AB:CD:EF:01:03,bridge=vmbr1,firewall=0",
		"ipconfig0":    "ip=10.0.0.13/24,gw=10.0.0.1",
		"ipconfig1":    "ip=dhcp",
		"nameserver":   "10.0.0.1 1.1.1.1",
		"searchdomain": "lab.example",
	})
	want := plan.ObservedVM{
		VMID: 104, Host: "pve2", Name: "lab-workers-1",
		Tags:  []string{"cluster-lab", "k8s-v1.35.0", "pool-workers", "proxmoxtalos", "schematic-ce4c980550dd", "talos-v1.12.5", "worker"},
		Cores: 4, Sockets: 1, CPUType: "x86-64-v2-AES", MemoryMiB: 8192, OnBoot: true, Agent: true,
		Disks:      []plan.Disk{{Interface: "scsi0", Storage: "local-lvm", SizeGiB: 20}, {Interface: "scsi1", Storage: "ceph", SizeGiB: 1}},
		ISOStorage: "local",
		NICs: []plan.NICConfig{
			{Bridge: "vmbr0", VLAN: 20, MTU: 9000, MAC: "02:AB:CD:EF:01:02", Address: "10.0.0.13/24", Gateway: "10.0.0.1"},
			{Bridge: "vmbr1", MAC: "02:AB:CD:EF:01:03"},
		},
		DNSServers: []string{"10.0.0.1", "1.1.1.1"}, SearchDomain: "lab.example",
	}
	if !equalObserved(vm, want) {
		t.Errorf("observed\n %+v\nwant\n %+v", vm, want)
	}
}

// Proxmox defaults fill in what the configuration leaves out.
func TestObserveVMDefaults(t *testing.T) {
	t.Parallel()
	vm := observeVM(100, "pve1", map[string]string{"name": "x", "template": "1", "memory": "current=2048", "cpu": "cputype=host,flags=+aes", "ide2": "none,media=cdrom"})
	if vm.Cores != 1 || vm.Sockets != 1 || vm.MemoryMiB != 2048 || vm.CPUType != "host" || !vm.Template || vm.ISOStorage != "" {
		t.Errorf("%+v", vm)
	}
	// agent's default key; onboot off
	if vm := observeVM(100, "pve1", map[string]string{"agent": "1", "onboot": "0"}); !vm.Agent || vm.OnBoot {
		t.Errorf("%+v", vm)
	}
	if d := observeVM(100, "pve1", map[string]string{}); d.MemoryMiB != 512 || d.CPUType != "kvm64" || d.OnBoot || d.Agent {
		t.Errorf("defaults %+v", d)
	}
}

func TestSizeGiB(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{"20G": 20, "512M": 1, "1T": 1024, "21474836480": 20, "1.5G": 2, "": 0, "x": 0} {
		if got := sizeGiB(in); got != want {
			t.Errorf("sizeGiB(%q) = %d, want %d", in, got, want)
		}
	}
}

func equalObserved(a, b plan.ObservedVM) bool {
	return a.VMID == b.VMID && a.Host == b.Host && a.Name == b.Name && slices.Equal(a.Tags, b.Tags) &&
		a.OnBoot == b.OnBoot && a.Agent == b.Agent && a.Template == b.Template && a.Cores == b.Cores && a.Sockets == b.Sockets && a.CPUType == b.CPUType &&
		a.MemoryMiB == b.MemoryMiB && slices.Equal(a.Disks, b.Disks) && a.ISOStorage == b.ISOStorage &&
		slices.Equal(a.NICs, b.NICs) && slices.Equal(a.DNSServers, b.DNSServers) && a.SearchDomain == b.SearchDomain
}
