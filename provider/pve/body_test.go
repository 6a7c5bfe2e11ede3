package pve

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
)

// TestCallsWithoutParametersSendNoBody: start, stop, template and the
// cloud-init regeneration take no parameters and must reach the server
// without a body (no "null" JSON text, no Content-Type), while a call with
// parameters still sends them as a JSON object.
func TestCallsWithoutParametersSendNoBody(t *testing.T) {
	t.Parallel()
	const upid = "UPID:pve1:000A1B2E:0001:6650AB03:qmstart:104:root@pam!test:"
	type seen struct{ body, contentType string }
	var mu sync.Mutex
	got := map[string]seen{}
	record := func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got[r.Method+" "+r.URL.Path] = seen{string(b), r.Header.Get("Content-Type")}
		mu.Unlock()
		if r.Method == http.MethodPut {
			data(w, nil)
			return
		}
		data(w, upid)
	}
	routes := versionRoute()
	for _, p := range []string{"POST /nodes/pve1/qemu/104/status/start", "POST /nodes/pve1/qemu/104/status/stop",
		"POST /nodes/pve1/qemu/104/template", "PUT /nodes/pve1/qemu/104/cloudinit", "POST /nodes/pve1/qemu/104/config"} {
		routes[p] = record
	}
	routes["GET /nodes/pve1/tasks/"+upid+"/status"] = func(w http.ResponseWriter, _ *http.Request) {
		data(w, map[string]any{"upid": upid, "status": "stopped", "exitstatus": "OK"})
	}
	srv := fakePVE(t, routes)
	ctx := context.Background()
	c, err := Connect(ctx, Options{Endpoint: srv.URL, APIToken: testToken, CACertPEM: caPEM(srv)})
	if err != nil {
		t.Fatal(err)
	}
	ref := VMRef{Node: "pve1", VMID: 104}
	for name, call := range map[string]func() error{
		"start":     func() error { return c.StartVM(ctx, ref) },
		"stop":      func() error { return c.StopVM(ctx, ref) },
		"template":  func() error { return c.ConvertToTemplate(ctx, ref) },
		"cloudinit": func() error { return c.RegenerateCloudInit(ctx, ref) },
		"config":    func() error { return c.UpdateVMConfig(ctx, ref, map[string]any{"onboot": true}, nil) },
	} {
		if err := call(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	for _, p := range []string{"POST /api2/json/nodes/pve1/qemu/104/status/start", "POST /api2/json/nodes/pve1/qemu/104/status/stop",
		"POST /api2/json/nodes/pve1/qemu/104/template", "PUT /api2/json/nodes/pve1/qemu/104/cloudinit"} {
		s, ok := got[p]
		if !ok {
			t.Fatalf("%s was not called", p)
		}
		if s.body != "" || s.contentType != "" {
			t.Errorf("%s sent body %q with Content-Type %q; want no body", p, s.body, s.contentType)
		}
	}
	if s := got["POST /api2/json/nodes/pve1/qemu/104/config"]; s.body != `{"onboot":"1"}` || s.contentType != "application/json" {
		t.Errorf("config update sent body %q (%q); want the parameters as a JSON object", s.body, s.contentType)
	}
}
