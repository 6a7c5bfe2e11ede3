package proxmox_test

import (
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// A clone to another node is refused at preview when the template's
// volumes are on local storage, as Proxmox would refuse it at create
// ("can't clone VM to node 'pve2' (VM uses local storage)"); the same clone
// on the template's own node passes.
func TestVirtualMachineCloneAcrossNodesNeedsSharedStorage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	tid := e.createTemplate()

	clone := func(node string) property.Map {
		return property.NewMap(map[string]property.Value{
			"node":  str(node),
			"clone": obj(map[string]property.Value{"vmId": num(tid), "node": str("pve1")}),
		})
	}
	failures := e.checkFailures(vmType, "across", property.Map{}, clone("pve2"))
	if len(failures) != 1 || failures[0].Property != "clone.node" ||
		!strings.Contains(failures[0].Reason, "scsi0 on local-lvm") || !strings.Contains(failures[0].Reason, "shared storage") {
		t.Fatalf("clone from pve1 to pve2 of a template on local-lvm: %+v", failures)
	}
	if failures := e.checkFailures(vmType, "same", property.Map{}, clone("pve1")); len(failures) != 0 {
		t.Fatalf("clone on the template's node: %+v", failures)
	}
	if vms := e.lab.VMs(); len(vms) != 1 {
		t.Fatalf("the checks created VMs: %+v", vms)
	}
}

// A create or clone call that Proxmox answers with a plain server error,
// leaving nothing behind, is sent again: the resource is created once.
func TestVirtualMachineCreateRetriedAfterServerError(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	tid := e.createTemplate()

	e.lab.SetFaults(pve.Faults{ServerErrorOnCall: "POST /nodes/{node}/qemu"})
	_, st := e.create(vmType, "plain", property.NewMap(plainVM("pve2", "plain")))
	e.lab.SetFaults(pve.Faults{ServerErrorOnCall: "POST /nodes/{node}/qemu/{vmid}/clone"})
	_, cst := e.create(vmType, "cloned", property.NewMap(map[string]property.Value{
		"node": str("pve1"), "name": str("cloned"), "started": boolean(false),
		"clone": obj(map[string]property.Value{"vmId": num(tid)}),
	}))
	if f := e.lab.PVE.Faults(); f.ServerErrorOnCall != "" {
		t.Fatalf("the clone call was never hit: %+v", f)
	}
	if vms := e.lab.VMs(); len(vms) != 3 {
		t.Fatalf("lab VMs: %+v", vms)
	}
	if getNum(t, st, "vmId") == getNum(t, cst, "vmId") {
		t.Fatal("two resources share a VMID")
	}
}

// A clone that lists a disk smaller than the template's fails at preview:
// the clone would exist before the resize that Proxmox refuses.
func TestVirtualMachineCloneDiskShrinkFailsAtPreview(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	tid := e.createTemplate() // scsi0: 4 GiB

	clone := func(size int) property.Map {
		return property.NewMap(map[string]property.Value{
			"node":  str("pve1"),
			"clone": obj(map[string]property.Value{"vmId": num(tid)}),
			"disks": arr(obj(map[string]property.Value{"interface": str("scsi0"), "storage": str("local-lvm"), "size": num(size)})),
		})
	}
	f := e.checkFailures(vmType, "small", property.Map{}, clone(2))
	if len(f) != 1 || f[0].Property != "disks[0].size" || !strings.Contains(f[0].Reason, "set size to 4 or more") {
		t.Fatalf("clone shrinking scsi0 from 4 to 2 GiB: %+v", f)
	}
	for _, size := range []int{4, 6} {
		if f := e.checkFailures(vmType, "ok", property.Map{}, clone(size)); len(f) != 0 {
			t.Fatalf("clone with scsi0 of %d GiB: %+v", size, f)
		}
	}
}
