package cluster

import (
	"context"
	"slices"
	"strings"
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

// The plan's hosts and VMs come from one GET /cluster/resources, which also
// answers the node list (no GET /nodes): the same facts as GET /nodes, also
// for the VMs' checks in the same process.
func TestPlanHostsAndVMsShareOneRead(t *testing.T) {
	t.Parallel()
	s, err := labpve.Start(labpve.Options{Seed: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := func() *pve.Client {
		c, err := pve.Connect(ctx, pve.Options{Endpoint: s.Endpoint(), APIToken: s.APIToken(), CACertPEM: string(s.CACertPEM())})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := connect()
	if err := c.CreateVM(ctx, pve.VMRef{Node: "pve2", VMID: 100}, map[string]any{"cores": 1, "memory": 512, "tags": "cluster-x"}); err != nil {
		t.Fatal(err)
	}
	resources, nodes := s.Calls("GET /cluster/resources"), s.Calls("GET /nodes")
	inv := &pveInventory{c: c}
	hosts, err := inv.Hosts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	vms, err := inv.VMs(ctx, "x")
	if err != nil || len(vms) != 1 {
		t.Fatalf("VMs: %v, %d VMs; want VM 100", err, len(vms))
	}
	folded, err := c.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r, n := s.Calls("GET /cluster/resources")-resources, s.Calls("GET /nodes")-nodes; r != 1 || n != 0 {
		t.Errorf("hosts, VMs and the node list sent %d GET /cluster/resources and %d GET /nodes, want 1 and 0", r, n)
	}
	direct, err := connect().Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(folded, func(a, b pve.NodeInfo) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(direct, func(a, b pve.NodeInfo) int { return strings.Compare(a.Name, b.Name) })
	if !slices.Equal(folded, direct) || len(hosts) != len(direct) {
		t.Errorf("nodes from /cluster/resources %+v, from GET /nodes %+v (hosts %v)", folded, direct, hosts)
	}
}
