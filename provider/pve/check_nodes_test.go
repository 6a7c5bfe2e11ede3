package pve

import (
	"context"
	"net/http"
	"testing"
)

// A VM this process creates and starts (WithClaimedStart) voids the node
// list for Nodes, but a Check may keep it with the VM's claim: a new
// cluster's workers, checked once the control planes' VMs run, read no
// node list of their own. Any other memory change, or a fresh list asked
// for, reads it again.
func TestCheckNodesKeepsTheListAcrossClaimedStarts(t *testing.T) {
	f := &discoveryPVE{}
	srv := fakePVE(t, f.routes())
	ctx := context.Background()
	c, err := Connect(ctx, Options{Endpoint: srv.URL, APIToken: testToken, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	_, at, err := c.CheckNodes(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	c.MemoryClaims().Claim("pve1", "cp-1", 1024)
	// the start marks the claim started
	if err := c.StartVM(WithClaimedStart(ctx, "cp-1"), VMRef{Node: "pve1", VMID: 100}); err != nil {
		t.Fatal(err)
	}

	nodes, at2, err := c.CheckNodes(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if n := f.count("/nodes"); n != 1 || nodes[0].Mem != 0 || !at2.Equal(at) {
		t.Errorf("after a claimed start: %d reads of /nodes (want 1), memory in use %d (want the kept 0)", n, nodes[0].Mem)
	}
	if got := c.MemoryClaims().StartedSince("pve1", "workers-1", at2); got != 1024 {
		t.Errorf("the kept list misses %d MiB of started VMs, want cp-1's 1024", got)
	}

	// asked afresh: read again, and the start shows in it
	nodes, at3, err := c.CheckNodes(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if n := f.count("/nodes"); n != 2 || nodes[0].Mem != 1<<30 {
		t.Errorf("a fresh list: %d reads of /nodes (want 2), memory in use %d", n, nodes[0].Mem)
	}
	if got := c.MemoryClaims().StartedSince("pve1", "workers-1", at3); got != 0 {
		t.Errorf("a list read after cp-1 started still misses %d MiB", got)
	}

	// a start this process did not claim: the kept list is not used
	if err := c.StartVM(ctx, VMRef{Node: "pve1", VMID: 100}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.CheckNodes(ctx, false); err != nil {
		t.Fatal(err)
	}
	if n := f.count("/nodes"); n != 3 {
		t.Errorf("after an unclaimed start: %d reads of /nodes, want 3", n)
	}
}

// The inventory's read stands in for the node list's (Inventory offers
// it): a list it offered after a claimed start is not kept across a start
// nobody claimed (review s15b M1: it was, and a Check missed that VM's
// memory).
func TestCheckNodesAfterTheInventoryOfferedTheList(t *testing.T) {
	f := &discoveryPVE{}
	routes := f.routes()
	routes["GET /cluster/resources"] = func(w http.ResponseWriter, _ *http.Request) {
		data(w, []map[string]any{{"type": "node", "node": "pve1", "id": "node/pve1", "status": "online",
			"maxmem": 8 << 30, "mem": f.mem.Load()}})
	}
	srv := fakePVE(t, routes)
	ctx := context.Background()
	c, err := Connect(ctx, Options{Endpoint: srv.URL, APIToken: testToken, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.CheckNodes(ctx, false); err != nil {
		t.Fatal(err)
	}
	c.MemoryClaims().Claim("pve1", "cp-1", 1024)
	if err := c.StartVM(WithClaimedStart(ctx, "cp-1"), VMRef{Node: "pve1", VMID: 100}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Inventory(ctx, 0); err != nil {
		t.Fatal(err)
	}
	reads := f.count("/nodes")
	if err := c.StartVM(ctx, VMRef{Node: "pve1", VMID: 100}); err != nil {
		t.Fatal(err)
	}
	nodes, _, err := c.CheckNodes(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if n := f.count("/nodes"); n != reads+1 || nodes[0].Mem != 2<<30 {
		t.Errorf("after the inventory and an unclaimed start: %d reads of /nodes (want %d), memory in use %d (want %d)",
			n, reads+1, nodes[0].Mem, 2<<30)
	}
}
