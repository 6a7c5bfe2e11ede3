package pve

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// discoveryPVE answers the discovery reads, a start and a config write, and
// counts the reads by path; fail makes the next read of /nodes fail.
type discoveryPVE struct {
	reads   sync.Map // path -> *atomic.Int64
	mem     atomic.Int64
	failing atomic.Bool
	slow    chan struct{} // when set, reads of /nodes wait for it to close
}

func (f *discoveryPVE) count(path string) int64 {
	n, _ := f.reads.LoadOrStore(path, new(atomic.Int64))
	return n.(*atomic.Int64).Load()
}

func (f *discoveryPVE) read(path string) {
	n, _ := f.reads.LoadOrStore(path, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
}

func (f *discoveryPVE) routes() map[string]http.HandlerFunc {
	r := versionRoute()
	r["GET /nodes"] = func(w http.ResponseWriter, _ *http.Request) {
		f.read("/nodes")
		if f.slow != nil {
			<-f.slow
		}
		if f.failing.Swap(false) {
			statusWithReason(w, nil, http.StatusForbidden, "Permission check failed (/, Sys.Audit)")
			return
		}
		data(w, []map[string]any{{"node": "pve1", "status": "online", "maxmem": 8 << 30, "mem": f.mem.Load()}})
	}
	r["GET /nodes/pve1/storage"] = func(w http.ResponseWriter, _ *http.Request) {
		f.read("/nodes/pve1/storage")
		data(w, []map[string]any{{"storage": "local", "content": "iso,import", "active": 1, "enabled": 1}})
	}
	r["GET /nodes/pve1/network"] = func(w http.ResponseWriter, _ *http.Request) {
		f.read("/nodes/pve1/network")
		data(w, []map[string]any{{"iface": "vmbr0"}})
	}
	r["POST /nodes/pve1/qemu/100/status/start"] = func(w http.ResponseWriter, _ *http.Request) {
		f.mem.Add(1 << 30)
		data(w, nil)
	}
	r["GET /nodes/pve1/qemu/100/status/current"] = func(w http.ResponseWriter, _ *http.Request) {
		data(w, map[string]any{"status": "running"})
	}
	r["POST /nodes/pve1/qemu/100/config"] = func(w http.ResponseWriter, _ *http.Request) { data(w, nil) }
	return r
}

func TestDiscoveryReadsAreSharedAndVoidedByMemoryChanges(t *testing.T) {
	f := &discoveryPVE{}
	srv := fakePVE(t, f.routes())
	ctx := context.Background()
	c, err := Connect(ctx, Options{Endpoint: srv.URL, APIToken: testToken, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.Storages(ctx, "pve1"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Bridges(ctx, "pve1"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Nodes(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, path := range []string{"/nodes", "/nodes/pve1/storage", "/nodes/pve1/network"} {
		if n := f.count(path); n != 1 {
			t.Errorf("GET %s was sent %d times for 3 askers, want once", path, n)
		}
	}

	// a start changes the node's memory in use: the node list is read again
	// and shows it; storages and bridges are not
	if err := c.StartVM(ctx, VMRef{Node: "pve1", VMID: 100}); err != nil {
		t.Fatal(err)
	}
	nodes, err := c.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := f.count("/nodes"); n != 2 || nodes[0].Mem != 1<<30 {
		t.Errorf("after a start: GET /nodes sent %d times (want 2), memory in use %d (want %d)", n, nodes[0].Mem, 1<<30)
	}
	// a config write that does not touch memory voids nothing; one that does, voids the node list
	if err := c.UpdateVMConfig(ctx, VMRef{Node: "pve1", VMID: 100}, map[string]any{"tags": "a"}, nil); err != nil {
		t.Fatal(err)
	}
	_, _ = c.Nodes(ctx)
	if n := f.count("/nodes"); n != 2 {
		t.Errorf("a tags change made the node list be read again (%d reads)", n)
	}
	if err := c.UpdateVMConfig(ctx, VMRef{Node: "pve1", VMID: 100}, map[string]any{"memory": 4096}, nil); err != nil {
		t.Fatal(err)
	}
	_, _ = c.Nodes(ctx)
	if n := f.count("/nodes"); n != 3 {
		t.Errorf("a memory change did not make the node list be read again (%d reads, want 3)", n)
	}
	_, _ = c.Storages(ctx, "pve1")
	_, _ = c.Bridges(ctx, "pve1")
	if s, b := f.count("/nodes/pve1/storage"), f.count("/nodes/pve1/network"); s != 1 || b != 1 {
		t.Errorf("storages read %d times, bridges %d times, want once each", s, b)
	}
}

func TestDiscoveryAskersWaitForOneReadAndFailuresAreNotKept(t *testing.T) {
	f := &discoveryPVE{slow: make(chan struct{})}
	srv := fakePVE(t, f.routes())
	ctx := context.Background()
	c, err := Connect(ctx, Options{Endpoint: srv.URL, APIToken: testToken, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Nodes(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	// the first read is in flight; the others wait for it rather than ask
	for f.count("/nodes") == 0 {
		time.Sleep(time.Millisecond)
	}
	close(f.slow)
	wg.Wait()
	if n := f.count("/nodes"); n != 1 {
		t.Errorf("5 concurrent askers sent %d reads, want 1", n)
	}

	c2, err := Connect(ctx, Options{Endpoint: srv.URL, APIToken: testToken, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	f.failing.Store(true)
	if _, err := c2.Nodes(ctx); err == nil {
		t.Fatal("a refused read answered")
	}
	nodes, err := c2.Nodes(ctx)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("after a failed read: nodes %v, %v", nodes, err)
	}
	if n := f.count("/nodes"); n != 3 {
		t.Errorf("GET /nodes sent %d times in all, want 3 (the first client's, the refused one, the next)", n)
	}
}

// The creates of one run share the read that looks for their interrupted
// runs' VMs, across their own writes; Inventory, which must show what this
// client changed, reads again after a write.
func TestOthersInventoryIsSharedAcrossOwnWrites(t *testing.T) {
	f := &discoveryPVE{}
	r := f.routes()
	r["GET /cluster/resources"] = func(w http.ResponseWriter, _ *http.Request) {
		f.read("/cluster/resources")
		data(w, []map[string]any{{"type": "qemu", "vmid": 100, "node": "pve1", "status": "running"}})
	}
	srv := fakePVE(t, r)
	ctx := context.Background()
	c, err := Connect(ctx, Options{Endpoint: srv.URL, APIToken: testToken, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.OthersInventory(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := c.UpdateVMConfig(ctx, VMRef{Node: "pve1", VMID: 100}, map[string]any{"tags": "a"}, nil); err != nil {
		t.Fatal(err)
	}
	inv, err := c.OthersInventory(ctx, time.Minute)
	if err != nil || len(inv.Guests) != 1 {
		t.Fatalf("inventory %+v, %v", inv, err)
	}
	if n := f.count("/cluster/resources"); n != 1 {
		t.Errorf("OthersInventory read %d times across an own write, want once", n)
	}
	if _, err := c.Inventory(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := f.count("/cluster/resources"); n != 2 {
		t.Errorf("Inventory after an own write read %d times in all, want 2 (it must read again)", n)
	}
	if _, err := c.OthersInventory(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if n := f.count("/cluster/resources"); n != 3 {
		t.Errorf("OthersInventory with maxAge 0 read %d times in all, want 3", n)
	}
}
