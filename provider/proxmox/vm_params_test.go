package proxmox

import (
	"reflect"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

func talosArgs() VirtualMachineArgs {
	return VirtualMachineArgs{
		Node:         "pve1",
		Name:         ptr("cp1"),
		Tags:         []string{"talos", "controlplane"},
		ISO:          ptr("local:iso/talos.iso"),
		CPU:          &VirtualMachineCpu{Cores: ptr(2), Type: ptr("host")},
		Memory:       &VirtualMachineMemory{Dedicated: 4096},
		OsType:       ptr(OsType("l26")),
		ScsiHardware: ptr(ScsiHardware("virtio-scsi-single")),
		Disks: []VirtualMachineDisk{{Interface: "scsi0", Storage: "local-lvm", Size: 20,
			SSD: ptr(true), IOThread: ptr(true)}},
		NetworkDevices: []VirtualMachineNetworkDevice{{Bridge: "vmbr0", VLANID: ptr(20)}},
		CloudInit: &VirtualMachineCloudInit{Storage: "local-lvm",
			IPConfigs: []VirtualMachineIpConfig{{IPv4: &VirtualMachineIpAddress{Address: "10.0.0.21/24", Gateway: ptr("10.0.0.1")}}},
			DNS:       &VirtualMachineDns{Servers: []string{"1.1.1.1", "9.9.9.9"}, Domain: ptr("lab")}},
		Agent: &VirtualMachineAgent{},
	}
}

func TestCreateParams(t *testing.T) {
	t.Parallel()
	got, err := createParams(talosArgs())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"name": "cp1", "tags": "controlplane;talos", "cores": "2", "cpu": "host", "memory": "4096",
		"ostype": "l26", "scsihw": "virtio-scsi-single", "agent": "enabled=1",
		"scsi0":  "local-lvm:20,iothread=1,ssd=1",
		"ide2":   "local:iso/talos.iso,media=cdrom",
		"boot":   "order=scsi0;ide2",
		"net0":   "virtio,bridge=vmbr0,tag=20",
		"ide0":   "local-lvm:cloudinit",
		"citype": "nocloud", "ipconfig0": "ip=10.0.0.21/24,gw=10.0.0.1",
		"nameserver": "1.1.1.1 9.9.9.9", "searchdomain": "lab",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("createParams:\n got %v\nwant %v", got, want)
	}
}

// liveFromCreate is the configuration Proxmox answers after creating the VM
// with createParams: volumes allocated, MACs generated, sizes written out.
func liveFromCreate() pve.VMConfig {
	return pve.VMConfig{
		"name": "cp1", "tags": "controlplane;talos", "cores": "2", "cpu": "host", "memory": "4096",
		"ostype": "l26", "scsihw": "virtio-scsi-single", "agent": "1",
		"scsi0":  "local-lvm:vm-104-disk-0,iothread=1,size=20G,ssd=1",
		"ide2":   "local:iso/talos.iso,media=cdrom,size=100M",
		"boot":   "order=scsi0;ide2",
		"net0":   "virtio=BC:24:11:AA:BB:01,bridge=vmbr0,tag=20",
		"ide0":   "local-lvm:vm-104-cloudinit,media=cdrom",
		"citype": "nocloud", "ipconfig0": "gw=10.0.0.1,ip=10.0.0.21/24",
		"nameserver": "1.1.1.1 9.9.9.9", "searchdomain": "lab",
		"smbios1": "uuid=0e8a5a39-0a4f-4b8e-9b55-e4c0c8e0c0aa", "vmgenid": "x", "digest": "y",
	}
}

func TestPlanConfigNoChangesAfterCreate(t *testing.T) {
	t.Parallel()
	a := talosArgs()
	p, err := planConfig(&a, a, liveFromCreate())
	if err != nil {
		t.Fatal(err)
	}
	if !p.empty() {
		t.Fatalf("a freshly created VM needs no changes, got %+v", p)
	}
}

func TestPlanConfigInPlaceChanges(t *testing.T) {
	t.Parallel()
	old := talosArgs()
	a := talosArgs()
	a.CPU.Cores = ptr(4)
	a.Memory.Dedicated = 8192
	a.Tags = []string{"talos", "worker"}
	a.Disks[0].Size = 40
	a.Disks[0].SSD = ptr(false)
	a.Disks = append(a.Disks, VirtualMachineDisk{Interface: "scsi1", Storage: "local-lvm", Size: 100})
	a.NetworkDevices[0].VLANID = ptr(0) // 0: untagged
	a.NetworkDevices[0].Firewall = ptr(true)
	a.Name = nil            // no longer given: not managed, the VM keeps its name
	a.Description = ptr("") // cleared
	p, err := planConfig(&old, a, liveFromCreate())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"cores": "4", "memory": "8192", "tags": "talos;worker",
		"scsi0": "local-lvm:vm-104-disk-0,iothread=1,size=20G",
		"scsi1": "local-lvm:100",
		// the generated MAC is kept
		"net0": "virtio=BC:24:11:AA:BB:01,bridge=vmbr0,firewall=1",
	}
	if !reflect.DeepEqual(p.Set, want) {
		t.Errorf("Set:\n got %v\nwant %v", p.Set, want)
	}
	if p.Delete != nil {
		t.Errorf("Delete = %v, want nothing (description is not set on the VM)", p.Delete)
	}
	if !reflect.DeepEqual(p.Resize, []diskResize{{Interface: "scsi0", SizeGiB: 40}}) {
		t.Errorf("Resize = %v", p.Resize)
	}
}

func TestPlanConfigRefusesShrink(t *testing.T) {
	t.Parallel()
	a := talosArgs()
	a.Disks[0].Size = 10
	_, err := planConfig(nil, a, liveFromCreate())
	if err == nil || !strings.Contains(err.Error(), "cannot shrink") || !strings.Contains(err.Error(), "20") {
		t.Fatalf("got %v", err)
	}
}

func TestPlanConfigRemovesDevicesTheInputsDropped(t *testing.T) {
	t.Parallel()
	old := talosArgs()
	old.Disks = append(old.Disks, VirtualMachineDisk{Interface: "scsi1", Storage: "local-lvm", Size: 100})
	old.NetworkDevices = append(old.NetworkDevices, VirtualMachineNetworkDevice{Bridge: "vmbr1"})
	old.EfiDisk = &VirtualMachineEfiDisk{Storage: "local-lvm"}
	live := liveFromCreate()
	live["scsi1"] = "local-lvm:vm-104-disk-1,size=100G"
	live["net1"] = "virtio=BC:24:11:AA:BB:02,bridge=vmbr1"
	live["efidisk0"] = "local-lvm:vm-104-disk-2,efitype=4m,pre-enrolled-keys=0,size=4M"
	a := talosArgs()
	a.ISO = ptr("") // eject
	a.EfiDisk = nil // no longer given: not managed, the EFI disk stays
	p, err := planConfig(&old, a, live)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ide2", "net1", "scsi1"}; !reflect.DeepEqual(p.Delete, want) {
		t.Errorf("Delete = %v, want %v", p.Delete, want)
	}
	if !reflect.DeepEqual(p.Set, map[string]any{"boot": "order=scsi0"}) {
		t.Errorf("Set = %v, want the boot order without the ISO drive", p.Set)
	}
	if want := []string{"local-lvm:vm-104-disk-1"}; !reflect.DeepEqual(p.RemovedVolumes, want) {
		t.Errorf("RemovedVolumes = %v, want %v", p.RemovedVolumes, want)
	}
}

func TestPlanConfigCloneKeepsTemplateSettings(t *testing.T) {
	t.Parallel()
	// a template with cloud-init on ide2, a 10 GiB disk and its own boot order
	live := pve.VMConfig{
		"name": "Copy-of-VM-talos-template", "scsi0": "local-lvm:vm-110-disk-0,size=10G",
		"ide2": "local-lvm:vm-110-cloudinit,media=cdrom", "boot": "order=scsi0;net0",
		"net0": "virtio=BC:24:11:00:00:09,bridge=vmbr0", "cores": "1", "memory": "2048",
	}
	a := VirtualMachineArgs{
		Node: "pve1", Name: ptr("w1"), Clone: &VirtualMachineClone{VMID: 9000},
		Memory:    &VirtualMachineMemory{Dedicated: 4096},
		Disks:     []VirtualMachineDisk{{Interface: "scsi0", Storage: "local-lvm", Size: 30}},
		CloudInit: &VirtualMachineCloudInit{Storage: "local-lvm", IPConfigs: []VirtualMachineIpConfig{{IPv4: &VirtualMachineIpAddress{Address: "dhcp"}}}},
	}
	p, err := planConfig(nil, a, live)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"name": "w1", "memory": "4096", "citype": "nocloud", "ipconfig0": "ip=dhcp"}
	if !reflect.DeepEqual(p.Set, want) {
		t.Errorf("Set:\n got %v\nwant %v (template's cloud-init drive on ide2 and boot order kept)", p.Set, want)
	}
	if !reflect.DeepEqual(p.Resize, []diskResize{{Interface: "scsi0", SizeGiB: 30}}) {
		t.Errorf("Resize = %v", p.Resize)
	}
}

func TestPlanConfigMovesDiskAndRecreatesCloudInit(t *testing.T) {
	t.Parallel()
	old := talosArgs()
	a := talosArgs()
	a.Disks[0].Storage = "ceph"
	a.CloudInit.Storage = "ceph"
	p, err := planConfig(&old, a, liveFromCreate())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p.Move, []diskMove{{Interface: "scsi0", Storage: "ceph"}}) {
		t.Errorf("Move = %v", p.Move)
	}
	if !reflect.DeepEqual(p.Delete, []string{"ide0"}) || !reflect.DeepEqual(p.Then, map[string]any{"ide0": "ceph:cloudinit"}) {
		t.Errorf("cloud-init drive not re-created: Delete %v Then %v", p.Delete, p.Then)
	}
}

func TestSameConfigValue(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		key, want, live string
		same            bool
	}{
		{"tags", "a;b", "b;a", true},
		{"tags", "a;b", "a", false},
		{"cpu", "host", "cputype=host,flags=+aes", true},
		{"memory", "2048", "current=2048", true},
		{"agent", "enabled=1", "1", true},
		{"agent", "enabled=0", "", true},
		{"onboot", "0", "", true},
		{"smbios1", "uuid=ABC", "uuid=abc,manufacturer=eA==", true},
		{"ipconfig0", "ip=dhcp", "ip=dhcp,gw=1.2.3.4", false},
		{"description", "hello", "hello\n", true},
		{"cores", "2", "4", false},
	} {
		if got := sameConfigValue(c.key, c.want, c.live); got != c.same {
			t.Errorf("sameConfigValue(%s, %q, %q) = %v, want %v", c.key, c.want, c.live, got, c.same)
		}
	}
}

func TestSizeGiB(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{"20G": 20, "512M": 0, "10240M": 10, "1T": 1024, "4194304K": 4, "21474836480": 20, "": 0, "x": 0} {
		if got := sizeGiB(in); got != want {
			t.Errorf("sizeGiB(%q) = %d, want %d", in, got, want)
		}
	}
}

// After an import every setting is in the old inputs; a program that gives
// only a few of them changes nothing else on the VM.
func TestPlanConfigPartialInputsAfterImportChangeNothingElse(t *testing.T) {
	t.Parallel()
	live := liveFromCreate()
	imported := observeArgs(observation{Ref: pve.VMRef{Node: "pve1", VMID: 104}, Config: live, Status: running()})
	partial := VirtualMachineArgs{Node: "pve1", Name: ptr("cp1"), CPU: &VirtualMachineCpu{Cores: ptr(2)}}
	p, err := planConfig(&imported, partial, live)
	if err != nil || !p.empty() {
		t.Fatalf("a partial program after an import changes the VM: %+v %v", p, err)
	}
	if d := diffVM(stateOf(imported, 104), partial); d.HasChanges {
		t.Fatalf("and its diff is not empty: %v", kinds(d))
	}
}

// Setting the SMBIOS uuid or the agent on a clone keeps the template's
// other options of those property strings.
func TestPlanConfigMergesSmbiosAndAgentOptions(t *testing.T) {
	t.Parallel()
	live := pve.VMConfig{
		"smbios1": "uuid=0e8a5a39-0a4f-4b8e-9b55-e4c0c8e0c0aa,manufacturer=QWNtZQ==,base64=1",
		"agent":   "0,fstrim_cloned_disks=1,type=virtio",
	}
	a := VirtualMachineArgs{Node: "pve1", Clone: &VirtualMachineClone{VMID: 9000},
		SmbiosUUID: ptr("11111111-2222-4333-8444-555555555555"), Agent: &VirtualMachineAgent{}}
	p, err := planConfig(nil, a, live)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"smbios1": "uuid=11111111-2222-4333-8444-555555555555,base64=1,manufacturer=QWNtZQ==",
		"agent":   "enabled=1,fstrim_cloned_disks=1,type=virtio",
	}
	if !reflect.DeepEqual(p.Set, want) {
		t.Errorf("Set:\n got %v\nwant %v", p.Set, want)
	}
}
