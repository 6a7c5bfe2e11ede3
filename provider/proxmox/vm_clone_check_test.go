package proxmox_test

import (
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
)

// A clone to another node is refused at preview when the template's
// volumes are on local storage, as Proxmox would refuse it at create
// ("can't clone VM to node 'pve2' (VM uses local storage)"); the same clone
// on the template's own node passes.
func TestVirtualMachineCloneAcrossNodesNeedsSharedStorage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	tm := plainVM("pve1", "template")
	tm["started"] = boolean(false)
	_, tst := e.create(vmType, "template", property.NewMap(tm))
	tid := getNum(t, tst, "vmId")
	e.convertToTemplate("pve1", tid)

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
