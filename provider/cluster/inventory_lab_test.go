package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
	labpve "github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// The cluster's plan reads the cluster's VMs once, and the creates of the
// same run that look for an interrupted run's VMs moments later share that
// read (one GET /cluster/resources, not two).
func TestPlanInventoryIsSharedWithTheCreates(t *testing.T) {
	t.Parallel()
	s, err := labpve.Start(labpve.Options{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pve.Connect(ctx, pve.Options{Endpoint: s.Endpoint(), APIToken: s.APIToken(), CACertPEM: string(s.CACertPEM())})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CreateVM(ctx, pve.VMRef{Node: "pve1", VMID: 100}, map[string]any{"cores": 1, "tags": "proxmoxtalos-cluster-x"}); err != nil {
		t.Fatal(err)
	}
	const call = "GET /cluster/resources"
	before := s.Calls(call)
	if _, err := (&pveInventory{c: c}).VMs(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	inv, err := c.OthersInventory(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := inv.Guest(100); !ok {
		t.Fatalf("the shared inventory lacks VM 100: %+v", inv)
	}
	if got := s.Calls(call) - before; got != 1 {
		t.Fatalf("the plan's read and a create's adoption lookup sent %d %s, want 1", got, call)
	}
}
