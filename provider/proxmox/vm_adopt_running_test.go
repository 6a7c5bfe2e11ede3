package proxmox_test

import (
	"context"
	"slices"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	proxmoxres "github.com/proxmoxtalos/proxmoxtalos/provider/proxmox"
	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
	labpve "github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// Of the guests other clients were creating or cloning, a create waits
// only for the VMs being created on its own node: a clone's lock is the
// clone path's (it waits by source), a container is no VM of this
// resource, and a VM on another node is never adopted.
func TestCreatesToAwait(t *testing.T) {
	t.Parallel()
	unsettled := []pve.ClusterVM{
		{VMID: 101, Type: "qemu", Node: "pve1", Lock: "create"},
		{VMID: 102, Type: "qemu", Node: "pve2", Lock: "create"},
		{VMID: 103, Type: "qemu", Node: "pve1", Lock: "clone"},
		{VMID: 104, Type: "lxc", Node: "pve1", Lock: "create"},
		{VMID: 105, Type: "qemu", Node: "pve1", Lock: "create"},
	}
	var got []int
	for _, g := range proxmoxres.CreatesToAwait(unsettled, "pve1") {
		got = append(got, g.VMID)
	}
	if !slices.Equal(got, []int{101, 105}) {
		t.Fatalf("creates to wait for on pve1: %v, want [101 105]", got)
	}
	if got := proxmoxres.CreatesToAwait(nil, "pve1"); len(got) != 0 {
		t.Fatalf("nothing unsettled, yet %v to wait for", got)
	}
}

// A killed run's create task still runs when the rerun creates the same
// resource: Proxmox shows that VM with only "lock: create" (no name, no
// tags) until the task ends. The create waits for that task, reads again
// and adopts the VM it made; one whose task fails (its config removed)
// leaves nothing, and the create makes the VM. Either way one VM exists.
// The lab holds the foreign create task open (fault rule Hold) until the
// provider is seen polling a task's status, or its create has returned.
func TestCreateWaitsForAForeignCreateStillRunning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		fails   string // the held task's error, "" for success
		adopted bool
	}{
		{name: "ends ok", adopted: true},
		{name: "fails", fails: "unable to create VM 321 - lab: the import failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, lab.Options{})
			ctx := context.Background()
			e.lab.PVE.SetFaults(labpve.Faults{Script: []labpve.FaultRule{{Task: "qmcreate", Hold: true, Message: tc.fails}}})
			node, err := e.adminClient().Node(ctx, "pve1")
			if err != nil {
				t.Fatal(err)
			}
			id := identityOf("late")
			if _, err := node.NewVirtualMachine(ctx, 321, proxmox.VirtualMachineOption{Name: "name", Value: "late"},
				proxmox.VirtualMachineOption{Name: "tags", Value: pve.CreatingTag(id)},
				proxmox.VirtualMachineOption{Name: "scsi0", Value: "local-lvm:4"}); err != nil {
				t.Fatal(err)
			}
			// what Proxmox shows while create_vm's worker runs
			if cur, _, ok := e.lab.VMConfig(321); !ok || len(cur) != 1 || cur["lock"] != "create" {
				t.Fatalf("VM 321 while its create task runs: %v (exists %v), want only lock: create", cur, ok)
			}

			checked := e.check(vmType, "late", property.Map{}, property.NewMap(plainVM("pve1", "late")))
			type result struct {
				st  property.Map
				err error
			}
			done := make(chan result, 1)
			go func() {
				resp, err := e.s.Create(p.CreateRequest{Urn: urn(vmType, "late"), Properties: checked})
				done <- result{resp.Properties, err}
			}()
			var res result
			for waiting := false; !waiting; {
				select {
				case res = <-done:
					waiting = true // returned without waiting: the checks below fail
					done <- res
				case <-time.After(10 * time.Millisecond):
					waiting = e.lab.PVE.Calls("GET /nodes/{node}/tasks/{upid}/status") > 0
				}
			}
			if tasks := e.lab.PVE.Tasks(); len(tasks) != 1 {
				t.Errorf("tasks while the foreign create was held: %+v, want only that create (the create waits before making a VM)", tasks)
			}
			e.lab.PVE.ReleaseHeldTasks()
			res = <-done
			if res.err != nil {
				t.Fatalf("create: %v", res.err)
			}
			vms := e.lab.VMs()
			if len(vms) != 1 {
				t.Fatalf("%d VMs after the create, want 1: %+v", len(vms), vms)
			}
			vmid := getNum(t, res.st, "vmId")
			if (vmid == 321) != tc.adopted {
				t.Fatalf("the create's VM is %d; adopted VM 321: want %v", vmid, tc.adopted)
			}
			if tags := labTags(t, e, vmid); !slices.Contains(tags, pve.OwnerTag(id, vmid)) || pve.IsCreating(tags) {
				t.Fatalf("tags of VM %d after the create: %v", vmid, tags)
			}
		})
	}
}
