package proxmox_test

import (
	"context"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	proxmoxres "github.com/proxmoxtalos/proxmoxtalos/provider/proxmox"
	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
)

// The creates of one run look for their interrupted runs' VMs in the
// inventory this run read before, whatever its age (adoptionMaxAge set to
// 0 here: no read is young enough to be shared on age alone), as long as
// that read shows no VM another client was still creating: such a VM gets
// its tags only when its create task ends, and may be the resource's own.
// Here the first read shows an interrupted create of "late" in progress
// (locked "create", no tags yet, as Proxmox shows a VM during create_vm);
// its task then ends. The create of "late" reads the inventory again and
// adopts that VM instead of making a second one; the create after it
// shares that read (nothing in it is being created by another client).
// Not parallel: it changes how old a shared read may be for the package.
func TestCreatesShareTheRunsInventoryUnlessAVMWasBeingCreated(t *testing.T) {
	defer proxmoxres.SetAdoptionMaxAge(0)()
	e := newEnv(t, lab.Options{})
	ctx := context.Background()
	node, err := e.adminClient().Node(ctx, "pve1")
	if err != nil {
		t.Fatal(err)
	}
	id := identityOf("late")
	task, err := node.NewVirtualMachine(ctx, 321, proxmox.VirtualMachineOption{Name: "name", Value: "late"},
		proxmox.VirtualMachineOption{Name: "tags", Value: pve.CreatingTag(id)},
		proxmox.VirtualMachineOption{Name: "scsi0", Value: "local-lvm:4"})
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx, 10*time.Millisecond, time.Minute); err != nil {
		t.Fatal(err)
	}
	setConf := func(key, value string) {
		t.Helper()
		if err := e.lab.SetVMConfig(321, key, value); err != nil {
			t.Fatal(err)
		}
	}
	// VM 321 as it is while the interrupted run's create task still runs,
	// but with no task behind the lock (TestCreateWaitsForAForeignCreateStillRunning
	// holds a real one)
	setConf("tags", "")
	setConf("lock", "create")

	// inventory reads of the create itself (not of its Check or preview)
	create := func(name string) (reads int, st property.Map) {
		t.Helper()
		checked := e.check(vmType, name, property.Map{}, property.NewMap(plainVM("pve1", name)))
		before := e.lab.PVE.Stats().ByKind["GET /cluster/resources"]
		resp, err := e.s.Create(p.CreateRequest{Urn: urn(vmType, name), Properties: checked})
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		return e.lab.PVE.Stats().ByKind["GET /cluster/resources"] - before, resp.Properties
	}
	// one read, and one more because no create task holds VM 321's lock:
	// one that ended between the read and the task list leaves its tags
	if reads, _ := create("early"); reads != 2 {
		t.Fatalf("the run's first create read the inventory %d times, want 2", reads)
	}

	// the interrupted create task ends: the VM has its tags
	setConf("lock", "")
	setConf("tags", pve.CreatingTag(id))
	reads, st := create("late")
	if vmid := getNum(t, st, "vmId"); vmid != 321 {
		t.Fatalf("created VM %d instead of adopting VM 321, which the run's first inventory read showed being created", vmid)
	}
	if n := len(e.lab.VMs()); n != 2 {
		t.Fatalf("%d VMs, want 2 (early, and late adopted): %+v", n, e.lab.VMs())
	}
	if reads != 1 {
		t.Errorf("the create after a read that showed another client's create in progress read the inventory %d times, want 1", reads)
	}

	if reads, _ := create("third"); reads != 0 {
		t.Errorf("a create after a read that showed nothing being created read the inventory %d times, want 0 (shared)", reads)
	}
	if n := len(e.lab.VMs()); n != 3 {
		t.Fatalf("%d VMs, want 3: %+v", n, e.lab.VMs())
	}
}
