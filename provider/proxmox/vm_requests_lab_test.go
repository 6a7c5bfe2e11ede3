package proxmox_test

import (
	"context"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
)

// The VMs of one run: the Check of a VM right after the DownloadFile that
// made its ISO finds the ISO in the list that download read (no content
// list of its own), and only the first VMID of the run and the first after
// a create found its id taken are asked of Proxmox (GET /cluster/nextid):
// the create itself is refused for an id in use, and the next one taken.
// The VM's status is not read after the start that made it run (the start
// task said so): the state says "running" all the same.
func TestRequestsOfVMCreates(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lab.Options{})
	_, iso := e.create(downloadType, "iso", isoInputs("pve1"))
	volid := iso.Get("volumeId").AsString()
	const contentList, nextID = "GET /nodes/{node}/storage/{storage}/content", "GET /cluster/nextid"
	const status = "GET /nodes/{node}/qemu/{vmid}/status/current"

	e.lab.PVE.ResetStats()
	_, st1 := e.create(vmType, "vm1", property.NewMap(vmInputs(e, "pve1", "vm1", volid, 21)))
	if n := e.lab.PVE.Stats().ByKind[contentList]; n != 0 {
		t.Errorf("the VM's Check after the download listed the storage %d times, want 0", n)
	}
	if n := e.lab.PVE.Stats().ByKind[status]; n != 0 {
		t.Errorf("the create read the status of the VM it started %d times, want 0", n)
	}
	if got := st1.Get("status").AsString(); got != "running" {
		t.Errorf("created and started VM's status %q, want running", got)
	}

	// another client takes the id after vm1's
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	other, err := pve.Connect(ctx, pve.Options{Endpoint: e.lab.Endpoint(), APIToken: e.lab.APIToken(), CACertPEM: string(e.lab.CACertPEM())})
	if err != nil {
		t.Fatal(err)
	}
	taken := getNum(t, st1, "vmId") + 1
	if err := other.CreateVM(ctx, pve.VMRef{Node: "pve2", VMID: taken}, map[string]any{"cores": 1}); err != nil {
		t.Fatal(err)
	}
	_, st2 := e.create(vmType, "vm2", property.NewMap(vmInputs(e, "pve1", "vm2", volid, 22)))
	_, st3 := e.create(vmType, "vm3", property.NewMap(vmInputs(e, "pve1", "vm3", volid, 23)))
	ids := []int{getNum(t, st1, "vmId"), getNum(t, st2, "vmId"), getNum(t, st3, "vmId")}
	if ids[1] != taken+1 || ids[2] != taken+2 {
		t.Errorf("VMIDs %v with %d taken by another client, want %d and %d after the first", ids, taken, taken+1, taken+2)
	}
	if n := e.lab.PVE.Stats().ByKind[nextID]; n != 2 {
		t.Errorf("3 creates, one of them refused its first id, asked for free VMIDs %d times, want 2", n)
	}
}
