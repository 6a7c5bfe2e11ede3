package proxmox

import (
	"reflect"
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
)

func stateOf(a VirtualMachineArgs, vmid int) VirtualMachineState {
	return VirtualMachineState{VirtualMachineArgs: a, VMID: vmid, SmbiosUUID: "0e8a5a39-0a4f-4b8e-9b55-e4c0c8e0c0aa",
		Status: "running", MACAddresses: []string{"BC:24:11:AA:BB:01"}}
}

func kinds(d p.DiffResponse) map[string]p.DiffKind {
	out := map[string]p.DiffKind{}
	for k, v := range d.DetailedDiff {
		out[k] = v.Kind
	}
	return out
}

func TestDiffVM(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		change func(a *VirtualMachineArgs)
		want   map[string]p.DiffKind
		dbr    bool
	}{
		{"nothing", func(*VirtualMachineArgs) {}, map[string]p.DiffKind{}, false},
		{"tags reordered", func(a *VirtualMachineArgs) { a.Tags = []string{"controlplane", "talos"} }, map[string]p.DiffKind{}, false},
		{"tags changed", func(a *VirtualMachineArgs) { a.Tags = []string{"talos"} }, map[string]p.DiffKind{"tags": p.Update}, false},
		{"cores", func(a *VirtualMachineArgs) { a.CPU.Cores = ptr(4) }, map[string]p.DiffKind{"cpu.cores": p.Update}, false},
		{"disk grows", func(a *VirtualMachineArgs) { a.Disks[0].Size = 40 }, map[string]p.DiffKind{"disks[0].size": p.Update}, false},
		{"disk added", func(a *VirtualMachineArgs) {
			a.Disks = append(a.Disks, VirtualMachineDisk{Interface: "scsi1", Storage: "local-lvm", Size: 5})
		}, map[string]p.DiffKind{"disks[1]": p.Add}, false},
		{"node", func(a *VirtualMachineArgs) { a.Node = "pve2" }, map[string]p.DiffKind{"node": p.UpdateReplace}, false},
		{"explicit vmId equal to the actual one", func(a *VirtualMachineArgs) { a.VMID = ptr(104) }, map[string]p.DiffKind{}, false},
		{"explicit vmId differs", func(a *VirtualMachineArgs) { a.VMID = ptr(200) }, map[string]p.DiffKind{"vmId": p.UpdateReplace}, false},
		{"node change keeping the explicit vmId deletes first", func(a *VirtualMachineArgs) { a.Node = "pve2"; a.VMID = ptr(104) },
			map[string]p.DiffKind{"node": p.UpdateReplace}, true},
		{"MAC given in another case", func(a *VirtualMachineArgs) { a.NetworkDevices[0].MACAddress = ptr("bc:24:11:aa:bb:01") }, map[string]p.DiffKind{}, false},
		{"MAC changed", func(a *VirtualMachineArgs) { a.NetworkDevices[0].MACAddress = ptr("BC:24:11:AA:BB:99") },
			map[string]p.DiffKind{"networkDevices[0].macAddress": p.Update}, false},
		{"smbios uuid equal", func(a *VirtualMachineArgs) { a.SmbiosUUID = ptr("0E8A5A39-0A4F-4B8E-9B55-E4C0C8E0C0AA") }, map[string]p.DiffKind{}, false},
		{"clone source", func(a *VirtualMachineArgs) { a.Clone = &VirtualMachineClone{VMID: 9001} }, map[string]p.DiffKind{"clone.vmId": p.UpdateReplace}, false},
		{"iso no longer given: not managed", func(a *VirtualMachineArgs) { a.ISO = nil }, map[string]p.DiffKind{}, false},
		{"iso ejected", func(a *VirtualMachineArgs) { a.ISO = ptr("") }, map[string]p.DiffKind{"iso": p.Update}, false},
		{"cpu and disks no longer given: not managed", func(a *VirtualMachineArgs) { a.CPU, a.Disks = nil, nil }, map[string]p.DiffKind{}, false},
		{"cpu type no longer given", func(a *VirtualMachineArgs) { a.CPU = &VirtualMachineCpu{Cores: ptr(2)} }, map[string]p.DiffKind{}, false},
		{"disk removed from a given list", func(a *VirtualMachineArgs) { a.Disks = []VirtualMachineDisk{} },
			map[string]p.DiffKind{"disks[0]": p.Delete}, false},
		{"disk interface renamed: the old disk goes, a blank one comes", func(a *VirtualMachineArgs) {
			a.Disks[0].Interface = "virtio0"
		}, map[string]p.DiffKind{"disks[0]": p.Update}, false},
		{"started: false", func(a *VirtualMachineArgs) { a.Started = ptr(false) }, map[string]p.DiffKind{"started": p.Update}, false},
		{"started: true is the default", func(a *VirtualMachineArgs) { a.Started = ptr(true) }, map[string]p.DiffKind{}, false},
		{"provider-side setting", func(a *VirtualMachineArgs) { a.StopOnDestroy = ptr(true) }, map[string]p.DiffKind{"stopOnDestroy": p.Add}, false},
		{"agent enabled is the default of an agent block", func(a *VirtualMachineArgs) { a.Agent = &VirtualMachineAgent{Enabled: ptr(true)} }, map[string]p.DiffKind{}, false},
		{"tags emptied", func(a *VirtualMachineArgs) { a.Tags = []string{} }, map[string]p.DiffKind{"tags": p.Update}, false},
	}
	for _, c := range cases {
		old := talosArgs()
		old.Clone = &VirtualMachineClone{VMID: 9000}
		old.NetworkDevices[0].MACAddress = ptr("BC:24:11:AA:BB:01")
		news := talosArgs()
		news.Clone = &VirtualMachineClone{VMID: 9000}
		news.NetworkDevices[0].MACAddress = nil
		c.change(&news)
		d := diffVM(stateOf(old, 104), news)
		if got := kinds(d); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: detailed diff %v, want %v", c.name, got, c.want)
		}
		if d.HasChanges != (len(c.want) > 0) {
			t.Errorf("%s: HasChanges = %v", c.name, d.HasChanges)
		}
		if d.DeleteBeforeReplace != c.dbr {
			t.Errorf("%s: DeleteBeforeReplace = %v, want %v", c.name, d.DeleteBeforeReplace, c.dbr)
		}
	}
}

func TestDiffVMImportedWithoutCloneSource(t *testing.T) {
	t.Parallel()
	old := talosArgs() // an imported VM: Read cannot know its clone source
	news := talosArgs()
	news.Clone = &VirtualMachineClone{VMID: 9000}
	if d := diffVM(stateOf(old, 104), news); d.HasChanges {
		t.Fatalf("clone source on an imported VM must not replace it: %v", kinds(d))
	}
}

// Disks are diffed by interface: removing the first of two disks deletes
// that one (at its old index), and the second is unchanged though its index
// moved.
func TestDiffVMDisksByInterface(t *testing.T) {
	t.Parallel()
	two := func() VirtualMachineArgs {
		a := talosArgs()
		a.Disks = []VirtualMachineDisk{{Interface: "scsi0", Storage: "local-lvm", Size: 20},
			{Interface: "scsi1", Storage: "local-lvm", Size: 5}}
		return a
	}
	cases := []struct {
		name  string
		disks []VirtualMachineDisk
		want  map[string]p.DiffKind
	}{
		{"first removed", []VirtualMachineDisk{{Interface: "scsi1", Storage: "local-lvm", Size: 5}},
			map[string]p.DiffKind{"disks[0]": p.Delete}},
		{"second removed", []VirtualMachineDisk{{Interface: "scsi0", Storage: "local-lvm", Size: 20}},
			map[string]p.DiffKind{"disks[1]": p.Delete}},
		{"reordered", []VirtualMachineDisk{{Interface: "scsi1", Storage: "local-lvm", Size: 5},
			{Interface: "scsi0", Storage: "local-lvm", Size: 20}}, map[string]p.DiffKind{}},
		{"first removed, second grows", []VirtualMachineDisk{{Interface: "scsi1", Storage: "local-lvm", Size: 8}},
			map[string]p.DiffKind{"disks[0]": p.Delete, "disks[0].size": p.Update}},
		{"first moved to virtio0 at the end", []VirtualMachineDisk{{Interface: "scsi1", Storage: "local-lvm", Size: 5},
			{Interface: "virtio0", Storage: "local-lvm", Size: 20}},
			map[string]p.DiffKind{"disks[0]": p.Delete, "disks[1]": p.Add}},
	}
	for _, c := range cases {
		news := two()
		news.Disks = c.disks
		if got := kinds(diffVM(stateOf(two(), 104), news)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	old := two()
	news := two()
	news.Disks = []VirtualMachineDisk{{Interface: "virtio0", Storage: "local-lvm", Size: 20}, news.Disks[1]}
	w := removedDiskWarnings(&old, news)
	if len(w) != 1 || !strings.Contains(w[0], "disk scsi0 (20 GiB on local-lvm)") || !strings.Contains(w[0], "deletes it") {
		t.Fatalf("warnings for scsi0 moved to virtio0: %q", w)
	}
	news.Disks = nil // not managed: nothing is deleted
	if w := removedDiskWarnings(&old, news); len(w) != 0 {
		t.Fatalf("warnings with disks not given: %q", w)
	}
}
