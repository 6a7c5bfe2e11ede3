package pve_test

import (
	"slices"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
	labpve "github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// Unsettled names the guests a read showed being created or cloned by
// another client: a VM this client's own create made is left out (its
// create call was accepted here), until this client destroys it and the
// VMID could be anyone's again; a lock that is no create or clone (a
// backup) is a finished VM whose tags the read shows.
func TestUnsettledLeavesOutThisClientsOwnCreates(t *testing.T) {
	t.Parallel()
	_, c, ctx := startLab(t, labpve.Options{})
	own := pve.VMRef{Node: "pve1", VMID: 150}
	if err := c.CreateVM(ctx, own, map[string]any{"cores": 1}); err != nil {
		t.Fatal(err)
	}
	inv := pve.Inventory{Guests: []pve.ClusterVM{
		{VMID: 150, Type: "qemu", Node: "pve1", Lock: "create"},
		{VMID: 151, Type: "qemu", Node: "pve1", Lock: "create"},
		{VMID: 152, Type: "qemu", Node: "pve2", Lock: "clone"},
		{VMID: 153, Type: "qemu", Node: "pve2", Lock: "backup"},
		{VMID: 154, Type: "qemu", Node: "pve2"},
	}}
	ids := func() []int {
		var out []int
		for _, g := range c.Unsettled(inv) {
			out = append(out, g.VMID)
		}
		return out
	}
	if got := ids(); !slices.Equal(got, []int{151, 152}) {
		t.Errorf("unsettled %v, want [151 152] (150 is this client's own create)", got)
	}
	// a create of this process that holds 151 (its call not answered yet)
	release, err := c.IDs().Reserve(151)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(); !slices.Equal(got, []int{152}) {
		t.Errorf("unsettled %v while this client holds VMID 151, want [152]", got)
	}
	release()
	if err := c.DeleteVM(ctx, own); err != nil {
		t.Fatal(err)
	}
	if got := ids(); !slices.Equal(got, []int{150, 151, 152}) {
		t.Errorf("unsettled after destroying VM 150: %v, want [150 151 152]", got)
	}
}

// A VM this client made that someone else destroys is forgotten once a
// read shows it gone: a create of another client that reuses the VMID
// during the run is then unsettled like any other.
func TestUnsettledForgetsOwnVMsOthersDestroyed(t *testing.T) {
	t.Parallel()
	lab, c, ctx := startLab(t, labpve.Options{})
	if err := c.CreateVM(ctx, pve.VMRef{Node: "pve1", VMID: 160}, map[string]any{"cores": 1}); err != nil {
		t.Fatal(err)
	}
	inv := pve.Inventory{Guests: []pve.ClusterVM{{VMID: 160, Type: "qemu", Node: "pve1", Lock: "create"}}}
	if got := c.Unsettled(inv); len(got) != 0 {
		t.Fatalf("unsettled %v: VM 160 is this client's own create", got)
	}
	if _, err := c.Inventory(ctx, 0); err != nil { // still there: kept
		t.Fatal(err)
	}
	if got := c.Unsettled(inv); len(got) != 0 {
		t.Fatalf("unsettled %v after a read that shows VM 160", got)
	}
	if err := lab.DeleteVM(160); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Inventory(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if got := c.Unsettled(inv); len(got) != 1 {
		t.Fatalf("unsettled %v after a read that shows VM 160 gone, want VM 160 (someone else's now)", got)
	}
}
