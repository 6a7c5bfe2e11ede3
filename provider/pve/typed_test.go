package pve

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
)

// The calls on go-proxmox's typed API or types (doc.go) read PVE's answers
// as the raw calls did, with one request each, and their errors stay
// *APIError naming the method and path.
func TestTypedCallsReadPVEAnswersInOneRequest(t *testing.T) {
	t.Parallel()
	var pools, pending atomic.Int32
	routes := versionRoute()
	routes["GET /pools"] = func(w http.ResponseWriter, _ *http.Request) {
		pools.Add(1)
		data(w, []map[string]any{{"poolid": "talos", "comment": "lab"}, {"poolid": "ci"}})
	}
	// entries as qemu-server's GET .../pending builds them (pve-guest-common
	// GuestHelpers.pm config_with_pending_array): a pending value of any
	// type, delete 1, or 2 when forced
	routes["GET /nodes/pve1/qemu/104/pending"] = func(w http.ResponseWriter, _ *http.Request) {
		pending.Add(1)
		data(w, []map[string]any{
			{"key": "memory", "value": 512, "pending": 768},
			{"key": "net1", "value": "virtio=BC:24:11:00:00:01,bridge=vmbr0", "delete": 1},
			{"key": "ipconfig1", "value": "ip=dhcp", "delete": 2},
			{"key": "cores", "value": 2},
			{"key": "name", "value": "a", "pending": "b"},
		})
	}
	srv := fakePVE(t, routes)
	ctx := context.Background()
	c, err := Connect(ctx, Options{Endpoint: srv.URL, APIToken: testToken, CACertPEM: caPEM(srv)})
	if err != nil {
		t.Fatal(err)
	}
	gotPools, err := c.Pools(ctx)
	if err != nil || !slices.Equal(gotPools, []string{"talos", "ci"}) || pools.Load() != 1 {
		t.Fatalf("pools %v, err %v, %d requests", gotPools, err, pools.Load())
	}
	changes, err := c.PendingChanges(ctx, VMRef{Node: "pve1", VMID: 104})
	want := []PendingChange{{Key: "memory"}, {Key: "net1", Delete: true}, {Key: "ipconfig1", Delete: true}, {Key: "name"}}
	if err != nil || !slices.Equal(changes, want) || pending.Load() != 1 {
		t.Fatalf("pending %+v, err %v, %d requests; want %+v", changes, err, pending.Load(), want)
	}

	routes = versionRoute()
	routes["GET /pools"] = func(w http.ResponseWriter, r *http.Request) {
		statusWithReason(w, r, 400, "Parameter verification failed.")
	}
	srv = fakePVE(t, routes)
	c, err = Connect(ctx, Options{Endpoint: srv.URL, APIToken: testToken, CACertPEM: caPEM(srv)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Pools(ctx)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Method != http.MethodGet || ae.Path != "/pools" || ae.Status != 400 {
		t.Fatalf("a refused pool list: got %v, want *APIError for GET /pools, status 400", err)
	}
}
