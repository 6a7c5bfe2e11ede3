package proxmox_test

import (
	"strings"
	"testing"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
)

// A VM created without vmId whose user then pins the id it was given passes
// preview with no change; pinning another VM's id still fails.
func TestVirtualMachinePinOwnVMID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	in := property.NewMap(plainVM("pve1", "pinned"))
	id, st := e.create(vmType, "pinned", in)
	vmid := getNum(t, st, "vmId")
	_, other := e.create(vmType, "other", property.NewMap(plainVM("pve1", "other")))

	pinned := in.Set("vmId", num(vmid))
	if d := e.diff(vmType, "pinned", id, st, in, pinned); d.HasChanges {
		t.Fatalf("pinning the VM's own vmId %d: %v", vmid, diffKinds(d))
	}
	taken := getNum(t, other, "vmId")
	f := e.checkFailures(vmType, "pinned", in, in.Set("vmId", num(taken)))
	if len(f) != 1 || f[0].Property != "vmId" || !strings.Contains(f[0].Reason, `VM "other"`) {
		t.Fatalf("pinning another VM's vmId: %+v", f)
	}
	// a VM of the same name holding the id passes Check; Diff, which knows
	// the state, refuses it
	_, twin := e.create(vmType, "twin", property.NewMap(plainVM("pve1", "pinned")))
	twinID := getNum(t, twin, "vmId")
	checked := e.check(vmType, "pinned", in, in.Set("vmId", num(twinID)))
	_, err := e.s.Diff(p.DiffRequest{Urn: urn(vmType, "pinned"), ID: id, State: st, OldInputs: in, Inputs: checked})
	if err == nil || !strings.Contains(err.Error(), "already used by VM") {
		t.Fatalf("diff to the twin's vmId %d: %v", twinID, err)
	}
}

// A vmId held by an LXC container fails preview, as Proxmox would refuse
// the create ("CT 150 already exists on node 'pve2'").
func TestVirtualMachineVMIDOfContainer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	if err := e.lab.PVE.AddContainer("pve2", 150, "dns"); err != nil {
		t.Fatal(err)
	}
	in := plainVM("pve1", "vm")
	in["vmId"] = num(150)
	f := e.checkFailures(vmType, "vm", property.Map{}, property.NewMap(in))
	if len(f) != 1 || f[0].Property != "vmId" || !strings.Contains(f[0].Reason, `CT "dns" on node pve2`) {
		t.Fatalf("vmId of a container: %+v", f)
	}
}

// A node that is down fails Check for a new VM on it, but only warns for a
// VM that already exists there, so the rest of the program can still be
// updated. The node goes down before the run (a run keeps the node list it
// read across the starts of the VMs it creates: pve.CheckNodes).
func TestVirtualMachineCheckWithNodeDown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	in := property.NewMap(plainVM("pve2", "existing"))
	e.create(vmType, "existing", in)
	e = e.nextRun()
	if err := e.lab.PVE.RestartNode("pve2", time.Minute); err != nil {
		t.Fatal(err)
	}
	if f := e.checkFailures(vmType, "existing", in, in); len(f) != 0 {
		t.Fatalf("existing VM on a node that is down: %+v", f)
	}
	f := e.checkFailures(vmType, "new", property.Map{}, property.NewMap(plainVM("pve2", "new")))
	if len(f) != 1 || f[0].Property != "node" || !strings.Contains(f[0].Reason, "offline") {
		t.Fatalf("new VM on a node that is down: %+v", f)
	}
	moved := property.NewMap(plainVM("pve1", "existing"))
	if f := e.checkFailures(vmType, "existing", moved, property.NewMap(plainVM("pve2", "existing"))); len(f) != 1 {
		t.Fatalf("VM moving onto a node that is down: %+v", f)
	}
}

// A node that is still a cluster member but does not answer (pveproxy
// gives up on it with 596, here after 100ms instead of its 30 s): as for a
// node that is down, Check warns for an existing VM and fails a new one,
// and Diff shows the existing VM as not checked (a change, never
// unchanged), although /cluster/resources still lists it as running. The
// node is asked once: later reads know it does not answer.
func TestVirtualMachineCheckAndDiffWithNodeThatDoesNotAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	in := property.NewMap(plainVM("pve2", "existing"))
	id, st := e.create(vmType, "existing", in)
	if err := e.lab.PVE.HangNode("pve2", 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	e.lab.PVE.ResetStats()
	e = e.nextRun() // the preview's provider, which has read nothing yet
	if f := e.checkFailures(vmType, "existing", in, in); len(f) != 0 {
		t.Fatalf("existing VM on a node that does not answer: %+v", f)
	}
	f := e.checkFailures(vmType, "new", property.Map{}, property.NewMap(plainVM("pve2", "new")))
	if len(f) != 1 || f[0].Property != "node" || !strings.Contains(f[0].Reason, "Proxmox node pve2 does not answer (596 Connection timed out)") {
		t.Fatalf("new VM on a node that does not answer: %+v", f)
	}
	d := e.diff(vmType, "existing", id, st, in, in)
	if !d.HasChanges || diffKinds(d)["powerState"] != p.Update {
		t.Fatalf("diff of a VM on a node that does not answer: %+v, want a powerState update (not checked)", d)
	}
	if n := e.lab.PVE.Stats().ByNode["pve2"]; n != 1 {
		t.Fatalf("%d requests reached pve2, want 1", n)
	}
}

// A VM migrated to another node outside Pulumi is destroyed where it is
// now; a VM that merely reuses the VMID elsewhere is left alone.
func TestVirtualMachineDeleteAfterMigration(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	in := plainVM("pve1", "moved")
	in["started"] = boolean(false)
	id, st := e.create(vmType, "moved", property.NewMap(in))
	vmid := getNum(t, st, "vmId")
	if err := e.lab.PVE.MigrateVM(vmid, "pve2"); err != nil {
		t.Fatal(err)
	}
	e.delete(vmType, "moved", id, st)
	e.requireNoVMs()

	// the VMID reused by another VM on another node: not this resource's
	id, st = e.create(vmType, "gone", property.NewMap(in))
	vmid = getNum(t, st, "vmId")
	if err := e.lab.PVE.DeleteVM(vmid); err != nil {
		t.Fatal(err)
	}
	other := plainVM("pve3", "someone-else")
	other["vmId"] = num(vmid)
	other["started"] = boolean(false)
	e.create(vmType, "other", property.NewMap(other))
	e.delete(vmType, "gone", id, st)
	if vms := e.lab.VMs(); len(vms) != 1 || vms[0].Name != "someone-else" {
		t.Fatalf("lab VMs after deleting a VM whose VMID another VM took: %+v", vms)
	}
}
