package pve

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/internal/closedport"
)

const testToken = "root@pam!test=5ecret-5ecret"

// fakePVE answers a few API paths the way Proxmox VE does, including the
// reason phrase carrying the error text.
func fakePVE(t *testing.T, routes map[string]http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "PVEAPIToken="+testToken {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		path := strings.TrimPrefix(r.URL.Path, "/api2/json")
		if h, ok := routes[r.Method+" "+path]; ok {
			h(w, r)
			return
		}
		http.Error(w, "", http.StatusNotImplemented)
	}))
	srv.Listener.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = ln
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func data(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"data": v})
}

func versionRoute() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"GET /version": func(w http.ResponseWriter, _ *http.Request) {
			data(w, map[string]any{"version": "9.1.3", "release": "9.1"})
		},
	}
}

func caPEM(srv *httptest.Server) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
}

func TestConnectVerifiesTLSWithCACert(t *testing.T) {
	t.Parallel()
	srv := fakePVE(t, versionRoute())
	c, err := Connect(context.Background(), Options{Endpoint: srv.URL + "/", APIToken: testToken, CACertPEM: caPEM(srv)})
	if err != nil {
		t.Fatal(err)
	}
	if c.Version() != "9.1.3" || c.Endpoint() != srv.URL+"/api2/json" {
		t.Fatalf("version %q endpoint %q", c.Version(), c.Endpoint())
	}
}

func TestConnectErrorsSayWhatIsWrong(t *testing.T) {
	t.Parallel()
	srv := fakePVE(t, versionRoute())
	ctx := context.Background()

	_, err := Connect(ctx, Options{Endpoint: srv.URL, APIToken: testToken})
	if err == nil || Classify(err) != KindTLS || !strings.Contains(err.Error(), "caCert") {
		t.Errorf("unknown CA: got %v (kind %v), want a TLS error that mentions caCert", err, Classify(err))
	}

	_, err = Connect(ctx, Options{Endpoint: srv.URL, APIToken: "root@pam!test=wrong-secret", Insecure: true})
	if err == nil || Classify(err) == KindTLS || !strings.Contains(err.Error(), "refused the API token") {
		t.Errorf("wrong token: got %v", err)
	}
	if err != nil && strings.Contains(err.Error(), "wrong-secret") {
		t.Errorf("the error leaks the token secret: %v", err)
	}

	addr := closedport.Addr(t, "127.0.0.1")
	_, err = Connect(ctx, Options{Endpoint: "https://" + addr, APIToken: testToken, Insecure: true})
	if err == nil || Classify(err) != KindUnreachable || !strings.Contains(err.Error(), "cannot reach") {
		t.Errorf("closed port: got %v (kind %v)", err, Classify(err))
	}
}

func TestErrorsFromReasonPhrase(t *testing.T) {
	t.Parallel()
	routes := versionRoute()
	routes["GET /nodes/pve1/qemu/104/config"] = func(w http.ResponseWriter, r *http.Request) {
		statusWithReason(w, r, 500, "Configuration file 'nodes/pve1/qemu-server/104.conf' does not exist")
	}
	// A 596 is retried until the caller's deadline: here that passes at
	// the second attempt (an event, not a clock), and the error is the 596.
	ctx, passDeadline := context.WithCancel(context.Background())
	defer passDeadline()
	var attempts atomic.Int32
	routes["GET /nodes/pve1/qemu/105/config"] = func(w http.ResponseWriter, r *http.Request) {
		if attempts.Add(1) == 2 {
			passDeadline()
		}
		statusWithReason(w, r, 596, "Connection timed out")
	}
	srv := fakePVE(t, routes)
	c, err := Connect(context.Background(), Options{Endpoint: srv.URL, APIToken: testToken, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.VMConfig(context.Background(), VMRef{Node: "pve1", VMID: 104})
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 500 || !IsNotFound(err) {
		t.Fatalf("missing VM: got %v", err)
	}
	_, err = c.VMConfig(ctx, VMRef{Node: "pve1", VMID: 105})
	if !errors.As(err, &ae) || ae.Status != 596 || Classify(err) != KindTransient || attempts.Load() != 2 {
		t.Fatalf("596 between nodes: got %v after %d attempts, want it after 2", err, attempts.Load())
	}
}

// statusWithReason writes a status line with a custom reason phrase, as
// pveproxy does, by hijacking the connection.
func statusWithReason(w http.ResponseWriter, _ *http.Request, code int, reason string) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: 13\r\nConnection: close\r\n\r\n{\"data\":null}", code, reason)
	_ = buf.Flush()
}

func TestWaitTaskChecksExitStatus(t *testing.T) {
	t.Parallel()
	const (
		failed   = "UPID:pve1:000A1B2C:0001:6650AB01:qmstart:104:root@pam!test:"
		warnings = "UPID:pve1:000A1B2D:0001:6650AB02:qmcreate:105:root@pam!test:"
		ok       = "UPID:pve1:000A1B2E:0001:6650AB03:qmcreate:106:root@pam!test:"
	)
	var polls atomic.Int32
	routes := versionRoute()
	routes["GET /nodes/pve1/tasks/"+failed+"/status"] = func(w http.ResponseWriter, _ *http.Request) {
		if polls.Add(1) < 3 {
			data(w, map[string]any{"status": "running"})
			return
		}
		data(w, map[string]any{"status": "stopped", "exitstatus": "start failed: kvm: cannot allocate memory"})
	}
	routes["GET /nodes/pve1/tasks/"+failed+"/log"] = func(w http.ResponseWriter, _ *http.Request) {
		data(w, []map[string]any{{"n": 1, "t": "starting VM 104"}, {"n": 2, "t": "kvm: cannot allocate memory"},
			{"n": 3, "t": "TASK ERROR: start failed: kvm: cannot allocate memory"}})
	}
	routes["GET /nodes/pve1/tasks/"+warnings+"/status"] = func(w http.ResponseWriter, _ *http.Request) {
		data(w, map[string]any{"status": "stopped", "exitstatus": "WARNINGS: 2"})
	}
	routes["GET /nodes/pve1/tasks/"+ok+"/status"] = func(w http.ResponseWriter, _ *http.Request) {
		data(w, map[string]any{"status": "stopped", "exitstatus": "OK"})
	}
	srv := fakePVE(t, routes)
	c, err := Connect(context.Background(), Options{Endpoint: srv.URL, APIToken: testToken, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	c.taskPoll = time.Millisecond
	ctx := context.Background()

	err = c.WaitTask(ctx, failed)
	var te *TaskError
	if !errors.As(err, &te) {
		t.Fatalf("failed task: got %v, want a TaskError", err)
	}
	if !strings.Contains(err.Error(), "cannot allocate memory") || !strings.Contains(err.Error(), "qmstart 104") ||
		len(te.LogTail) != 3 {
		t.Errorf("task error does not quote the task and its log: %v", err)
	}
	var logged []string
	lctx := WithLogger(ctx, func(m string) { logged = append(logged, m) })
	if err := c.WaitTask(lctx, warnings); err != nil {
		t.Errorf("WARNINGS: 2 must count as success, got %v", err)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "2 warning") {
		t.Errorf("warnings not reported: %q", logged)
	}
	if err := c.WaitTask(ctx, ok); err != nil {
		t.Errorf("OK: %v", err)
	}
}

func TestTaskSucceeded(t *testing.T) {
	t.Parallel()
	for status, want := range map[string]bool{
		"OK": true, "WARNINGS: 1": true, "WARNINGS: 12": true,
		"": false, "WARNINGS:": false, "unable to create VM 104 - VM 104 already exists on node 'pve2'": false,
		"interrupted by signal": false,
	} {
		if got, _ := TaskSucceeded(status); got != want {
			t.Errorf("TaskSucceeded(%q) = %v, want %v", status, got, want)
		}
	}
}

func TestParseUPID(t *testing.T) {
	t.Parallel()
	u, err := ParseUPID("UPID:pve2:00001234:00ABCDEF:6650AB01:qmclone:9000:root@pam!tok:")
	if err != nil || u.Node != "pve2" || u.Type != "qmclone" || u.ID != "9000" {
		t.Fatalf("ParseUPID = %+v, %v", u, err)
	}
	if _, err := ParseUPID("not-a-upid"); err == nil {
		t.Fatal("ParseUPID accepted garbage")
	}
}

// 401 and 403 keep Proxmox's reason phrase, say what to do, and never
// carry the token.
func TestAuthErrorsKeepTheReason(t *testing.T) {
	t.Parallel()
	routes := versionRoute()
	routes["GET /nodes/pve1/qemu/104/config"] = func(w http.ResponseWriter, r *http.Request) {
		statusWithReason(w, r, 403, "Permission check failed (/vms/104, VM.Audit)")
	}
	srv := fakePVE(t, routes)
	c, err := Connect(context.Background(), Options{Endpoint: srv.URL, APIToken: testToken, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.VMConfig(context.Background(), VMRef{Node: "pve1", VMID: 104})
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 403 || Classify(err) != KindAuth ||
		!strings.Contains(err.Error(), "Permission check failed (/vms/104, VM.Audit)") ||
		!strings.Contains(err.Error(), "privilege-separated token needs it in its own ACLs and its user in theirs") {
		t.Fatalf("403: %v", err)
	}
	if strings.Contains(err.Error(), "5ecret") {
		t.Fatalf("the token's secret is in the error: %v", err)
	}
	_, err = Connect(context.Background(), Options{Endpoint: srv.URL, APIToken: "root@pam!test=wrong-secret", Insecure: true})
	if err == nil || !strings.Contains(err.Error(), "refused the API token") || strings.Contains(err.Error(), "wrong-secret") {
		t.Fatalf("401 at connect: %v", err)
	}
}

// A read of the inventory that waits for Proxmox does not hold a second
// caller past its own context (review finding 2): before, the cache's
// sync.Mutex ignored the context, and the second caller waited for the
// first read's retries (this test then hangs until go test's -timeout).
func TestInventoryWaitEndsWithTheContext(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}), make(chan struct{})
	routes := versionRoute()
	routes["GET /cluster/resources"] = func(w http.ResponseWriter, _ *http.Request) {
		started <- struct{}{}
		<-release
		data(w, []any{})
	}
	srv := fakePVE(t, routes)
	c, err := Connect(context.Background(), Options{Endpoint: srv.URL + "/", APIToken: testToken, CACertPEM: caPEM(srv)})
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan error)
	go func() {
		_, err := c.Inventory(context.Background(), time.Minute)
		first <- err
	}()
	<-started

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Inventory(ctx, time.Minute); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "/cluster/resources") {
		t.Errorf("second caller, its context ended during the first read: %v, want the context's error saying what it waited for", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Errorf("first read: %v", err)
	}
}

// The HA manager's state of a guest comes with the inventory (hastate of
// GET /cluster/resources: "HA service status (for HA managed VMs)").
func TestInventoryReadsHAState(t *testing.T) {
	t.Parallel()
	routes := versionRoute()
	routes["GET /cluster/resources"] = func(w http.ResponseWriter, _ *http.Request) {
		data(w, []any{
			map[string]any{"type": "qemu", "vmid": 104, "node": "pve2", "status": "stopped", "hastate": "recovery"},
			map[string]any{"type": "qemu", "vmid": 105, "node": "pve2", "status": "running"},
		})
	}
	srv := fakePVE(t, routes)
	c, err := Connect(context.Background(), Options{Endpoint: srv.URL + "/", APIToken: testToken, CACertPEM: caPEM(srv)})
	if err != nil {
		t.Fatal(err)
	}
	inv, err := c.Inventory(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if g, _ := inv.Guest(104); g.HAState != "recovery" {
		t.Errorf("VM 104 HA state %q, want recovery", g.HAState)
	}
	if g, _ := inv.Guest(105); g.HAState != "" {
		t.Errorf("VM 105 (not HA-managed) HA state %q", g.HAState)
	}
}
