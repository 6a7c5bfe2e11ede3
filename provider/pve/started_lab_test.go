package pve_test

import (
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
	labpve "github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// StartedAt knows the VMs this client started, from the end of the start
// (QEMU runs, the guest boots: the VM watch gives it time to answer), and
// an inventory read says when it was made, so that a look answered by a
// shared read is dated by that read.
func TestStartedAtAndInventoryTime(t *testing.T) {
	t.Parallel()
	_, c, ctx := startLab(t, labpve.Options{})
	ref := pve.VMRef{Node: "pve1", VMID: 160}
	if err := c.CreateVM(ctx, ref, map[string]any{"cores": 1}); err != nil {
		t.Fatal(err)
	}
	if at, ok := c.StartedAt(160); ok {
		t.Fatalf("a VM only created counts as started at %s", at)
	}
	before := time.Now()
	if err := c.StartVM(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if at, ok := c.StartedAt(160); !ok || at.Before(before) || at.After(time.Now()) {
		t.Errorf("StartedAt after the start: %s %v, want a time during StartVM", at, ok)
	}
	if _, ok := c.StartedAt(161); ok {
		t.Error("a VM this client never started counts as started")
	}

	read := time.Now()
	inv, err := c.Inventory(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if inv.At.Before(read) || inv.At.After(time.Now()) {
		t.Errorf("the read's time %s is not when it was made (after %s)", inv.At, read)
	}
	again, err := c.Inventory(ctx, time.Hour)
	if err != nil || !again.At.Equal(inv.At) {
		t.Errorf("a shared read is dated %s (%v), want the first read's %s", again.At, err, inv.At)
	}
}
