package proxmox

import (
	"reflect"
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

// imageArgs is a Talos VM whose system disk is imported from a disk image.
func imageArgs() VirtualMachineArgs {
	a := talosArgs()
	a.ISO = nil
	a.Disks[0].ImportFrom = ptr("local:import/talos-v1.12.5-nocloud-amd64.qcow2")
	return a
}

func TestCreateParamsImportsADisk(t *testing.T) {
	t.Parallel()
	got, err := createParams(imageArgs())
	if err != nil {
		t.Fatal(err)
	}
	// the only form Proxmox accepts: size 0 and import-from
	if want := "local-lvm:0,import-from=local:import/talos-v1.12.5-nocloud-amd64.qcow2,iothread=1,ssd=1"; got["scsi0"] != want {
		t.Errorf("scsi0 = %q, want %q", got["scsi0"], want)
	}
	if got["boot"] != "order=scsi0" {
		t.Errorf("boot = %q, want the imported disk first", got["boot"])
	}
	if _, iso := got["ide2"]; iso {
		t.Errorf("no ISO was asked for: %v", got)
	}
}

func TestPlanConfigGrowsAnImportedDisk(t *testing.T) {
	t.Parallel()
	a := imageArgs()
	live := liveFromCreate()
	delete(live, "ide2")
	live["boot"] = "order=scsi0"
	// the image was 1 GiB; the disk is to be 20 GiB
	live["scsi0"] = "local-lvm:vm-104-disk-0,iothread=1,size=1G,ssd=1"
	plan, err := planConfig(nil, a, live)
	if err != nil {
		t.Fatal(err)
	}
	if want := []diskResize{{Interface: "scsi0", SizeGiB: 20}}; !reflect.DeepEqual(plan.Resize, want) {
		t.Errorf("resize %v, want %v", plan.Resize, want)
	}
	if len(plan.Set) != 0 || len(plan.Imports) != 0 {
		t.Errorf("an existing disk is not imported again: %+v", plan)
	}
	// an image larger than the disk cannot fit: Proxmox cannot shrink
	live["scsi0"] = "local-lvm:vm-104-disk-0,iothread=1,size=24G,ssd=1"
	if _, err := planConfig(nil, a, live); err == nil || !strings.Contains(err.Error(), "cannot shrink") {
		t.Errorf("got %v, want a refusal to shrink", err)
	}
}

func TestPlanConfigImportsANewDiskOnAnExistingVM(t *testing.T) {
	t.Parallel()
	old := talosArgs()
	a := talosArgs()
	a.Disks = append(a.Disks, VirtualMachineDisk{Interface: "scsi1", Storage: "local-lvm", Size: 4,
		ImportFrom: ptr("local-lvm:vm-9000-disk-0")})
	plan, err := planConfig(&old, a, liveFromCreate())
	if err != nil {
		t.Fatal(err)
	}
	if plan.Set["scsi1"] != "local-lvm:0,import-from=local-lvm:vm-9000-disk-0" || !reflect.DeepEqual(plan.Imports, []string{"scsi1"}) {
		t.Errorf("plan %+v", plan)
	}
}

func TestValidateImportFrom(t *testing.T) {
	t.Parallel()
	cases := []struct{ vol, reason string }{
		{"local:import/talos.qcow2", ""},
		{"local:import/talos.raw", ""},
		{"nfs:import/appliance.ova/disk1.vmdk", ""},
		{"local-lvm:vm-9000-disk-0", ""},
		{"local:9000/base-9000-disk-0.qcow2", ""},
		{"/var/lib/vz/import/talos.raw", "only root@pam"},
		{"local:iso/talos.iso", "not a disk image"},
		{"local:import/appliance.ova", "whole OVA"},
		{"local:import/talos.raw.xz", "not a volume to import"},
		{"talos.qcow2", "not a volume to import"},
	}
	for _, c := range cases {
		a := imageArgs()
		a.Disks[0].ImportFrom = ptr(c.vol)
		f := validateVM(a, nil, unknowns{})
		if c.reason == "" {
			if len(f) != 0 {
				t.Errorf("%s refused: %v", c.vol, f)
			}
			continue
		}
		if len(f) != 1 || f[0].Property != "disks[0].importFrom" || !strings.Contains(f[0].Reason, c.reason) {
			t.Errorf("%s: got %v, want a failure at disks[0].importFrom mentioning %q", c.vol, f, c.reason)
		}
	}
}

func TestDiffVMImportSource(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		old, new *string
		want     map[string]p.DiffKind
	}{
		{"same source", ptr("local:import/a.qcow2"), ptr("local:import/a.qcow2"), map[string]p.DiffKind{}},
		// recorded in place: the disk keeps its content (see converge)
		{"new source", ptr("local:import/a.qcow2"), ptr("local:import/b.qcow2"), map[string]p.DiffKind{"disks[0].importFrom": p.Update}},
		{"no longer given: not managed", ptr("local:import/a.qcow2"), nil, map[string]p.DiffKind{}},
		// an imported VM, or a disk made without a source: unknown origin
		{"state does not know the source", nil, ptr("local:import/a.qcow2"), map[string]p.DiffKind{}},
	}
	for _, c := range cases {
		old, news := imageArgs(), imageArgs()
		old.Disks[0].ImportFrom, news.Disks[0].ImportFrom = c.old, c.new
		st := stateOf(old, 104)
		d := diffVM(st, news)
		if got := kinds(d); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: diff %v, want %v", c.name, got, c.want)
		}
		if st.Disks[0].ImportFrom != c.old {
			t.Errorf("%s: diffVM changed the state it was given", c.name)
		}
	}
}

func TestDiffVMTemplate(t *testing.T) {
	t.Parallel()
	vm := imageArgs()
	tmpl := imageArgs()
	tmpl.Template = ptr(true)
	tmplState := stateOf(tmpl, 9000)
	tmplState.Started = ptr(false) // what a refresh records: a template does not run
	cases := []struct {
		name string
		old  VirtualMachineState
		news VirtualMachineArgs
		want map[string]p.DiffKind
	}{
		{"a VM becomes a template in place", stateOf(vm, 104), tmpl, map[string]p.DiffKind{"template": p.Add, "started": p.Update}},
		{"a template stays one", tmplState, tmpl, map[string]p.DiffKind{}},
		{"template no longer given: not managed", tmplState, vm, map[string]p.DiffKind{}},
		{"a template cannot turn back into a VM", tmplState, func() VirtualMachineArgs {
			a := imageArgs()
			a.Template = ptr(false)
			return a
		}(), map[string]p.DiffKind{"template": p.UpdateReplace, "started": p.Update}},
	}
	for _, c := range cases {
		d := diffVM(c.old, c.news)
		if got := kinds(d); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: diff %v, want %v", c.name, got, c.want)
		}
	}
}

func TestValidateTemplate(t *testing.T) {
	t.Parallel()
	a := imageArgs()
	a.Template, a.Started = ptr(true), ptr(true)
	f := validateVM(a, nil, unknowns{})
	if len(f) != 1 || f[0].Property != "started" || !strings.Contains(f[0].Reason, "never runs") {
		t.Fatalf("got %v", f)
	}
	// a template's disks cannot move to another storage
	old := imageArgs()
	old.Template = ptr(true)
	a = imageArgs()
	a.Disks[0].Storage = "ceph"
	f = validateVM(a, &old, unknowns{})
	if len(f) != 1 || f[0].Property != "disks[0].storage" || !strings.Contains(f[0].Reason, "template") {
		t.Fatalf("got %v", f)
	}
	// ... unless the template is replaced by a VM
	a.Template = ptr(false)
	if f := validateVM(a, &old, unknowns{}); len(f) != 0 {
		t.Fatalf("got %v", f)
	}
}

func TestObserveTemplate(t *testing.T) {
	t.Parallel()
	cfg := liveFromCreate()
	delete(cfg, "ide2")
	cfg["boot"], cfg["template"] = "order=scsi0", "1"
	cfg["scsi0"] = "local-lvm:base-9000-disk-0,iothread=1,size=20G,ssd=1"
	o := observation{Ref: pve.VMRef{Node: "pve1", VMID: 9000}, Status: pve.VMStatus{Status: "stopped"}, Config: cfg}
	a := observeArgs(o)
	if a.Template == nil || !*a.Template || a.Started == nil || *a.Started {
		t.Fatalf("template %v started %v", a.Template, a.Started)
	}
	// a refresh with the user's inputs keeps both as given
	in := imageArgs()
	in.Template = ptr(true)
	st := stateFrom(o, in, nil)
	if !*st.Template || st.Disks[0].ImportFrom == nil {
		t.Fatalf("reconciled: template %v disks %+v", st.Template, st.Disks)
	}
	if d := diffVM(st, in); d.HasChanges {
		t.Fatalf("a refreshed template shows changes: %v", kinds(d))
	}
}
