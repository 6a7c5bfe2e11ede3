package proxmox_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// plainVM is a small VM without boot media: Proxmox starts it, nothing boots.
func plainVM(node, name string) map[string]property.Value {
	return map[string]property.Value{
		"node":   str(node),
		"name":   str(name),
		"memory": obj(map[string]property.Value{"dedicated": num(512)}),
		"disks": arr(obj(map[string]property.Value{
			"interface": str("scsi0"), "storage": str("local-lvm"), "size": num(4),
		})),
		"networkDevices": arr(obj(map[string]property.Value{"bridge": str("vmbr0")})),
	}
}

func TestVirtualMachineBadInputsFailInCheck(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	_, existing := e.create(vmType, "existing", property.NewMap(plainVM("pve1", "existing")))
	taken := getNum(t, existing, "vmId")

	cases := []struct {
		name   string
		change func(m map[string]property.Value)
		path   string
		reason string
	}{
		{"unknown node", func(m map[string]property.Value) { m["node"] = str("pve9") }, "node", "pve1, pve2, pve3"},
		{"malformed disk interface", func(m map[string]property.Value) {
			m["disks"] = arr(obj(map[string]property.Value{"interface": str("scsi99"), "storage": str("local-lvm"), "size": num(4)}))
		}, "disks[0].interface", "scsi0-scsi30"},
		{"memory 0", func(m map[string]property.Value) {
			m["memory"] = obj(map[string]property.Value{"dedicated": num(0)})
		}, "memory.dedicated", "at least 16 MiB"},
		{"duplicate vmId", func(m map[string]property.Value) { m["vmId"] = num(taken) }, "vmId", "already used"},
		{"bridge missing on the node", func(m map[string]property.Value) {
			m["networkDevices"] = arr(obj(map[string]property.Value{"bridge": str("vmbr7")}))
		}, "networkDevices[0].bridge", "does not exist on node pve1"},
		{"storage without images", func(m map[string]property.Value) {
			m["disks"] = arr(obj(map[string]property.Value{"interface": str("scsi0"), "storage": str("local"), "size": num(4)}))
		}, "disks[0].storage", "images"},
		{"pool missing", func(m map[string]property.Value) { m["pool"] = str("nope") }, "pool",
			`pool "nope" does not exist`},
		{"clone source missing", func(m map[string]property.Value) {
			m["clone"] = obj(map[string]property.Value{"vmId": num(9999)})
		}, "clone.vmId", "does not exist"},
	}
	for _, c := range cases {
		m := plainVM("pve1", "bad")
		c.change(m)
		f := e.checkFailures(vmType, "bad-"+strings.ReplaceAll(c.name, " ", "-"), property.Map{}, property.NewMap(m))
		ok := false
		for _, x := range f {
			ok = ok || (x.Property == c.path && strings.Contains(x.Reason, c.reason))
		}
		if !ok {
			t.Errorf("%s: no failure at %s mentioning %q, got %v", c.name, c.path, c.reason, f)
		}
	}
	if vms := e.lab.VMs(); len(vms) != 1 {
		t.Errorf("bad inputs created VMs: %+v", vms)
	}
}

func TestVirtualMachineTwoResourcesClaimingOneVMID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	a := plainVM("pve1", "a")
	a["vmId"] = num(777)
	b := plainVM("pve2", "b")
	b["vmId"] = num(777)
	e.check(vmType, "a", property.Map{}, property.NewMap(a))
	f := e.checkFailures(vmType, "b", property.Map{}, property.NewMap(b))
	if len(f) != 1 || f[0].Property != "vmId" || !strings.Contains(f[0].Reason, `"a"`) {
		t.Fatalf("got %v", f)
	}
}

func TestVirtualMachineConcurrentCreatesGetDistinctVMIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{Faults: pve.Faults{LockTimeoutRate: 0.1}})
	const n = 20
	type created struct {
		id    string
		state property.Map
	}
	results := make([]created, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("w%02d", i)
			node := []string{"pve1", "pve2", "pve3"}[i%3]
			in := e.check(vmType, name, property.Map{}, property.NewMap(plainVM(node, name)))
			resp, err := e.s.Create(p.CreateRequest{Urn: urn(vmType, name), Properties: in})
			if err != nil {
				t.Errorf("create %s: %v", name, err)
				return
			}
			results[i] = created{resp.ID, resp.Properties}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	seen := map[int]string{}
	for i, r := range results {
		id := getNum(t, r.state, "vmId")
		if other, dup := seen[id]; dup {
			t.Errorf("VMID %d given to w%02d and %s", id, i, other)
		}
		seen[id] = fmt.Sprintf("w%02d", i)
	}
	if vms := e.lab.VMs(); len(vms) != n {
		t.Fatalf("the lab holds %d VMs, want %d", len(vms), n)
	}
	for i, r := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := e.s.Delete(p.DeleteRequest{Urn: urn(vmType, fmt.Sprintf("w%02d", i)), ID: r.id, Properties: r.state}); err != nil {
				t.Errorf("delete: %v", err)
			}
		}()
	}
	wg.Wait()
	e.requireNoVMs()
}

func TestVirtualMachineDeletedOutOfBandLeavesTheState(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	in := property.NewMap(plainVM("pve1", "gone"))
	id, st := e.create(vmType, "gone", in)
	if err := e.lab.DeleteVM(getNum(t, st, "vmId")); err != nil {
		t.Fatal(err)
	}
	if rd := e.read(vmType, "gone", id, st, in); rd.ID != "" {
		t.Fatalf("a deleted VM is still read back: %v", rd.ID)
	}
	e.delete(vmType, "gone", id, st) // destroy after the fact succeeds too
}

func TestVirtualMachineStoppedOutOfBandIsStartedAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	in := property.NewMap(plainVM("pve1", "s"))
	id, st := e.create(vmType, "s", in)
	vmid := getNum(t, st, "vmId")
	if err := e.lab.PVE.StopVM(vmid); err != nil {
		t.Fatal(err)
	}
	rd := e.read(vmType, "s", id, st, in)
	d := e.diff(vmType, "s", id, rd.Properties, rd.Inputs, in)
	if _, ok := d.DetailedDiff["started"]; !ok || hasReplace(d) {
		t.Fatalf("a stopped VM shows as %v", diffKinds(d))
	}
	st2 := e.update(vmType, "s", id, rd.Properties, rd.Inputs, in)
	if st2.Get("status").AsString() != "running" {
		t.Fatalf("status after update: %v", st2.Get("status"))
	}
}

func TestVirtualMachineImport(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	// a VM made outside this program (here: another program's resource)
	m := plainVM("pve2", "legacy")
	m["tags"] = arr(str("b"), str("a"))
	m["cpu"] = obj(map[string]property.Value{"cores": num(3)})
	_, made := e.create(vmType, "other-program", property.NewMap(m))
	vmid := getNum(t, made, "vmId")

	id := fmt.Sprintf("pve2/%d", vmid)
	rd := e.read(vmType, "imported", id, property.Map{}, property.Map{})
	if rd.ID != id {
		t.Fatalf("import read id %q", rd.ID)
	}
	in := rd.Inputs
	if in.Get("node").AsString() != "pve2" || int(in.Get("vmId").AsNumber()) != vmid ||
		int(in.Get("cpu").AsMap().Get("cores").AsNumber()) != 3 {
		t.Fatalf("imported inputs: %v", in)
	}
	// the program written from the imported inputs shows no changes
	if d := e.diff(vmType, "imported", id, rd.Properties, in, in); d.HasChanges {
		t.Fatalf("diff after import: %v", diffKinds(d))
	}
	// and an import by VMID alone finds the node
	if rd := e.read(vmType, "imported2", fmt.Sprint(vmid), property.Map{}, property.Map{}); rd.ID != id {
		t.Fatalf("import by vmid read id %q, want %q", rd.ID, id)
	}
}

func TestVirtualMachineReplaceOnNodeChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	in := property.NewMap(plainVM("pve1", "mover"))
	id, st := e.create(vmType, "mover", in)
	in2 := in.Set("node", str("pve2"))
	d := e.diff(vmType, "mover", id, st, in, in2)
	if k := diffKinds(d)["node"]; k != p.UpdateReplace {
		t.Fatalf("node change: %v", diffKinds(d))
	}
	// the engine creates the replacement, then deletes the old VM
	id2, st2 := e.create(vmType, "mover", in2)
	e.delete(vmType, "mover", id, st)
	vms := e.lab.VMs()
	if len(vms) != 1 || vms[0].Node != "pve2" || vms[0].VMID != getNum(t, st2, "vmId") || id2 == id {
		t.Fatalf("after replace: %+v", vms)
	}
}

func TestVirtualMachineCloneFromTemplate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	tid := e.createTemplate()

	in := property.NewMap(map[string]property.Value{
		"node":  str("pve1"),
		"name":  str("clone1"),
		"clone": obj(map[string]property.Value{"vmId": num(tid), "full": boolean(false)}),
		"disks": arr(obj(map[string]property.Value{"interface": str("scsi0"), "storage": str("local-lvm"), "size": num(10)})),
		"cpu":   obj(map[string]property.Value{"cores": num(2)}),
		"cloudInit": obj(map[string]property.Value{
			"storage":   str("local-lvm"),
			"ipConfigs": arr(obj(map[string]property.Value{"ipv4": obj(map[string]property.Value{"address": str("dhcp")})})),
		}),
	})
	id, st := e.create(vmType, "clone1", in)
	vmid := getNum(t, st, "vmId")
	cur, _, _ := e.lab.VMConfig(vmid)
	if cur["name"] != "clone1" || cur["cores"] != "2" || !strings.Contains(cur["scsi0"], "size=10G") ||
		cur["ipconfig0"] != "ip=dhcp" || !strings.Contains(cur["ide0"], "cloudinit") {
		t.Fatalf("clone config: %v", cur)
	}
	if d := e.diff(vmType, "clone1", id, st, in, in); d.HasChanges {
		t.Fatalf("second diff: %v", diffKinds(d))
	}
	// another clone source replaces the VM; growing the disk does not
	in2 := in.Set("disks", arr(obj(map[string]property.Value{"interface": str("scsi0"), "storage": str("local-lvm"), "size": num(12)})))
	if d := e.diff(vmType, "clone1", id, st, in, in2); hasReplace(d) || !d.HasChanges {
		t.Fatalf("disk growth: %v", diffKinds(d))
	}
	in3 := in.Set("clone", obj(map[string]property.Value{"vmId": num(tid + 1), "full": boolean(false)}))
	if f := e.checkFailures(vmType, "clone1", in, in3); len(f) == 0 {
		t.Fatal("a clone source that does not exist passed Check")
	}
	e.delete(vmType, "clone1", id, st)
}

func TestVirtualMachineFailedStartStaysInState(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{Nodes: []pve.NodeSpec{{Name: "small", MemoryMiB: 4096}}})
	m := plainVM("small", "big")
	m["memory"] = obj(map[string]property.Value{"dedicated": num(8192)})
	in := e.check(vmType, "big", property.Map{}, property.NewMap(m))
	resp, err := e.s.Create(p.CreateRequest{Urn: urn(vmType, "big"), Properties: in})
	if err == nil || resp.PartialState == nil || resp.ID == "" {
		t.Fatalf("a VM that cannot start: err %v, partial %v, id %q", err, resp.PartialState, resp.ID)
	}
	if !strings.Contains(strings.Join(resp.PartialState.Reasons, " "), "memory") {
		t.Errorf("the reason does not quote the task log: %v", resp.PartialState.Reasons)
	}
	if vms := e.lab.VMs(); len(vms) != 1 {
		t.Fatalf("lab VMs %+v: the VM must exist and be in the state", vms)
	}
	// the next up converges: with less memory it starts
	m["memory"] = obj(map[string]property.Value{"dedicated": num(1024)})
	st := e.update(vmType, "big", resp.ID, resp.Properties, in, property.NewMap(m))
	if st.Get("status").AsString() != "running" {
		t.Fatalf("status %v", st.Get("status"))
	}
}

// A running VM whose guest ignores ACPI (nothing booted) still gets its
// pending changes: the restart stops it hard after the shutdown timeout.
func TestVirtualMachinePendingChangesOnAGuestThatIgnoresACPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	m := plainVM("pve1", "deaf")
	m["shutdownTimeout"] = num(1)
	in := property.NewMap(m)
	id, st := e.create(vmType, "deaf", in)
	m["memory"] = obj(map[string]property.Value{"dedicated": num(768)})
	in2 := property.NewMap(m)
	st2 := e.update(vmType, "deaf", id, st, in, in2)
	cur, pending, _ := e.lab.VMConfig(getNum(t, st2, "vmId"))
	if cur["memory"] != "768" || len(pending) != 0 || st2.Get("status").AsString() != "running" {
		t.Fatalf("memory %q pending %v status %v", cur["memory"], pending, st2.Get("status"))
	}
}

// Shrinking a disk is a preview error, not a replacement that loses data.
func TestVirtualMachineDiskShrinkFailsInCheck(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	m := plainVM("pve1", "shrink")
	in := property.NewMap(m)
	e.create(vmType, "shrink", in)
	m["disks"] = arr(obj(map[string]property.Value{"interface": str("scsi0"), "storage": str("local-lvm"), "size": num(2)}))
	f := e.checkFailures(vmType, "shrink", in, property.NewMap(m))
	if len(f) != 1 || f[0].Property != "disks[0].size" || !strings.Contains(f[0].Reason, "cannot shrink to 2 GiB") {
		t.Fatalf("got %v", f)
	}
}

// A VM paused in Proxmox (qemu runs, its vCPUs do not) is not running as
// far as the program goes: without a refresh, the preview shows an update
// of its power state and the update resumes it.
func TestVirtualMachinePausedOutOfBandIsResumed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	in := property.NewMap(plainVM("pve1", "p"))
	id, st := e.create(vmType, "p", in)
	vmid := getNum(t, st, "vmId")
	if err := e.lab.PVE.PauseVM(vmid); err != nil {
		t.Fatal(err)
	}
	d := e.diff(vmType, "p", id, st, in, in)
	if _, ok := d.DetailedDiff["powerState"]; !ok || hasReplace(d) {
		t.Fatalf("a paused VM shows as %v", diffKinds(d))
	}
	// a refresh reports it as Proxmox's UI does, not as "running"
	if got := e.read(vmType, "p", id, st, in).Properties.Get("status"); got.AsString() != "paused" {
		t.Fatalf("a paused VM's status output is %v, want paused", got.GoString())
	}
	st = e.update(vmType, "p", id, st, in, in)
	if got := st.Get("status"); got.AsString() != "running" {
		t.Fatalf("after the update the status output is %v, want running", got.GoString())
	}
	for _, vm := range e.lab.PVE.VMs() {
		if vm.VMID == vmid && vm.Status != "running" {
			t.Fatalf("after the update the VM is %s", vm.Status)
		}
	}
	if d := e.diff(vmType, "p", id, st, in, in); d.HasChanges {
		t.Fatalf("after the update a diff shows %v", diffKinds(d))
	}
}
