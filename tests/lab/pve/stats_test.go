package pve

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestStatsCountRequestsVMsAndTaskPolls: the lab counts what it served by
// kind and by VM, and each task's polls, including the reads after the
// task had been reported stopped; GET /lab/stats serves the same figures
// to a caller with a token, DELETE resets them.
func TestStatsCountRequestsVMsAndTaskPolls(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	ctx := ctxT(t)
	node, err := c.Node(ctx, "pve1") // GET /nodes/pve1/status
	if err != nil {
		t.Fatal(err)
	}
	task, err := node.NewVirtualMachine(ctx, 100, opt("scsi0", "local-lvm:4"))
	if err != nil {
		t.Fatal(err)
	}
	waitOK(t, ctx, task) // polls until stopped
	var raw map[string]any
	for range 2 { // asked again after it was told: counted
		if err := c.Get(ctx, "/nodes/pve1/tasks/"+string(task.UPID)+"/status", &raw); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Get(ctx, "/nodes/pve1/qemu/100/config", &raw); err != nil {
		t.Fatal(err)
	}

	st := s.Stats()
	if st.ByKind["POST /nodes/{node}/qemu"] != 1 || st.ByKind["GET /nodes/{node}/qemu/{vmid}/config"] != 1 ||
		st.ByKind["GET /nodes/{node}/status"] != 1 {
		t.Fatalf("by kind: %v", st.ByKind)
	}
	if len(st.Tasks) != 1 {
		t.Fatalf("tasks: %+v", st.Tasks)
	}
	ts := st.Tasks[0]
	polls := st.ByKind[kindTaskStatus]
	// waitOK's polls (the first read always says running) plus the two reads after
	if ts.Type != "qmcreate" || ts.VMID != 100 || ts.Polls != polls || polls < 4 || ts.PollsAfterEnd != 3 || ts.NoticedAfter < 0 {
		t.Fatalf("task stats %+v, %d status reads", ts, polls)
	}
	vm := st.VMs[100]
	if vm == nil || vm.TaskPolls != polls || vm.Requests != polls+2 || vm.ByKind["POST /nodes/{node}/qemu"] != 1 {
		t.Fatalf("VM 100 stats %+v (%d polls)", vm, polls)
	}
	if st.Requests != polls+3 {
		t.Fatalf("%d requests, want %d: %v", st.Requests, polls+3, st.ByKind)
	}

	// the same over HTTP, with a token only
	get := func(method, token string) (int, []byte) {
		req, _ := http.NewRequestWithContext(ctx, method, s.Endpoint()+"/lab/stats", nil)
		if token != "" {
			req.Header.Set("Authorization", "PVEAPIToken="+token)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(s.CACertPEM())
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if code, _ := get(http.MethodGet, ""); code != http.StatusUnauthorized {
		t.Fatalf("GET /lab/stats without a token: %d", code)
	}
	code, body := get(http.MethodGet, s.APIToken())
	var served Stats
	if code != http.StatusOK || json.Unmarshal(body, &served) != nil || served.ByKind["POST /nodes/{node}/qemu"] != 1 ||
		len(served.Tasks) != 1 || served.Tasks[0].Polls != polls {
		t.Fatalf("GET /lab/stats: %d %s", code, body)
	}
	beforeReset := time.Now()
	if code, _ := get(http.MethodDelete, s.APIToken()); code != http.StatusNoContent {
		t.Fatalf("DELETE /lab/stats: %d", code)
	}
	// Since restarts at the reset: not before the DELETE was sent
	if st := s.Stats(); st.Requests != 0 || len(st.Tasks) != 0 || st.Since.Before(beforeReset) || strings.Contains(string(body), s.APIToken()) {
		t.Fatalf("after reset: %+v", st)
	}
}
