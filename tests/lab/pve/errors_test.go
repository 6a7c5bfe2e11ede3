package pve

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	proxmox "github.com/luthermonson/go-proxmox"
)

// rawCall sends a request with the lab's token (or the given
// Authorization header) and returns the status line and body.
func rawCall(t *testing.T, s *Server, method, path, auth string, form url.Values) (string, string) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.CACertPEM())
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, s.APIURL()+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if auth == "" {
		auth = "PVEAPIToken=" + s.APIToken()
	}
	if auth != "none" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.Status, string(b)
}

func TestAuthAndRouting(t *testing.T) {
	t.Parallel()
	s, _ := startLab(t, Options{})
	cases := []struct {
		name, method, path, auth string
		wantStatus, wantBody     string
	}{
		{"no token", "GET", "/nodes", "none", "401 No ticket", ""},
		{"wrong secret", "GET", "/nodes", "PVEAPIToken=root@pam!lab=00000000-0000-0000-0000-000000000000", "401 Authentication failed!", ""},
		{"wrong token id", "GET", "/nodes", "PVEAPIToken=root@pam!other=" + strings.SplitN(s.APIToken(), "=", 2)[1], "401 Authentication failed!", ""},
		{"unknown path", "GET", "/nodes/pve1/lxc", "", "501 Method 'GET /nodes/pve1/lxc' not implemented", ""},
		{"unknown node", "GET", "/nodes/pve9/qemu", "", "500 hostname lookup 'pve9' failed - failed to get address info for: pve9: Name or service not known", ""},
		{"missing vm", "GET", "/nodes/pve1/qemu/100/config", "", "500 Configuration file 'nodes/pve1/qemu-server/100.conf' does not exist", `"message":"Configuration file 'nodes/pve1/qemu-server/100.conf' does not exist\n"`},
		{"bad param", "GET", "/nodes/pve1/qemu/abc/config", "", "400 Parameter verification failed.", `"errors":{"vmid":"type check ('integer') failed - got 'abc'"}`},
		{"ok", "GET", "/version", "", "200 OK", `"version":"9.1.3"`},
	}
	for _, tc := range cases {
		status, body := rawCall(t, s, tc.method, tc.path, tc.auth, nil)
		if status != tc.wantStatus || !strings.Contains(body, tc.wantBody) {
			t.Errorf("%s: got %q %s, want %q containing %s", tc.name, status, body, tc.wantStatus, tc.wantBody)
		}
	}
	// A path parameter repeated in the body with another value.
	status, body := rawCall(t, s, "POST", "/nodes/pve1/qemu", "", url.Values{"vmid": {"100"}, "node": {"pve2"}})
	if status != "400 Parameter verification failed." || !strings.Contains(body, "duplicate parameter (already defined in URI) with conflicting values!") {
		t.Errorf("conflicting node: %s %s", status, body)
	}
	// go-proxmox maps 401 to ErrNotAuthorized.
	c := proxmox.NewClient(s.APIURL(), proxmox.WithAPIToken("root@pam!lab", "wrong"), proxmox.WithRootCAs(certPool(s)))
	if _, err := c.Version(ctxT(t)); !errors.Is(err, proxmox.ErrNotAuthorized) {
		t.Errorf("wrong token through go-proxmox: %v", err)
	}
}

func certPool(s *Server) *x509.CertPool {
	p := x509.NewCertPool()
	p.AppendCertsFromPEM(s.CACertPEM())
	return p
}

// TestTLSVerification: the certificate chains to the lab's CA only.
func TestTLSVerification(t *testing.T) {
	t.Parallel()
	s, _ := startLab(t, Options{})
	c := proxmox.NewClient(s.APIURL(), proxmox.WithAPIToken("root@pam!lab", "x"), proxmox.WithHTTPClient(&http.Client{}))
	_, err := c.Version(ctxT(t))
	var uerr x509.UnknownAuthorityError
	if !errors.As(err, &uerr) {
		t.Fatalf("client without the lab CA: %v, want an unknown authority error", err)
	}
}

func TestListenLoopbackOnly(t *testing.T) {
	t.Parallel()
	if _, err := Start(Options{Listen: "0.0.0.0:0"}); err == nil || !strings.Contains(err.Error(), "not a loopback address") {
		t.Fatalf("non-loopback listen: %v", err)
	}
}

func TestCreateErrors(t *testing.T) {
	t.Parallel()
	_, c := startLab(t, Options{})
	ctx := ctxT(t)
	node, _ := c.Node(ctx, "pve1")
	node2, _ := c.Node(ctx, "pve2")
	task, err := node.NewVirtualMachine(ctx, 104, opt("name", "a"))
	if err != nil {
		t.Fatal(err)
	}
	waitOK(t, ctx, task)
	_, err = node2.NewVirtualMachine(ctx, 104, opt("name", "b"))
	mustContain(t, err, "500 unable to create VM 104 - VM 104 already exists on node 'pve1'")

	_, err = node.NewVirtualMachine(ctx, 105, opt("cores", 0))
	mustContain(t, err, `bad request: 400 Parameter verification failed. - {"cores":"value must have a minimum value of 1"}`)

	_, err = node.NewVirtualMachine(ctx, 105, opt("ide2", "local:iso/none.iso"))
	mustContain(t, err, `"ide2":"explicit 'media=cdrom' is required for iso images"`)

	_, err = node.NewVirtualMachine(ctx, 105, opt("scsi0", "local:8"))
	mustContain(t, err, `"storage":"storage 'local' does not support vm images"`)

	_, err = node.NewVirtualMachine(ctx, 105, opt("scsi0", "nosuch:8"))
	mustContain(t, err, "500 storage 'nosuch' does not exist")

	_, err = node.NewVirtualMachine(ctx, 105, opt("pool", "nopool"))
	if !errors.Is(err, proxmox.ErrNotAuthorized) {
		t.Fatalf("unknown pool: %v (PVE answers 403 Permission check failed)", err)
	}

	// An existing volume that is missing fails in the worker, and the
	// config is removed again.
	task, err = node.NewVirtualMachine(ctx, 105, opt("scsi0", "local-lvm:vm-105-disk-7"))
	if err != nil {
		t.Fatal(err)
	}
	if st := waitExit(t, ctx, task); st != "unable to create VM 105 - volume local-lvm:vm-105-disk-7 does not exist" {
		t.Fatalf("exit status %q", st)
	}
	_, err = node.VirtualMachine(ctx, 105)
	mustContain(t, err, "Configuration file 'nodes/pve1/qemu-server/105.conf' does not exist")

	// The VM lives on pve1: asking pve2 is "does not exist" there.
	_, err = node2.VirtualMachine(ctx, 104)
	mustContain(t, err, "500 Configuration file 'nodes/pve2/qemu-server/104.conf' does not exist")
}

// TestRootOnlyOptions: an API token is not root@pam, so options outside
// qemu-server's privilege groups are refused.
func TestRootOnlyOptions(t *testing.T) {
	t.Parallel()
	_, c := startLab(t, Options{})
	ctx := ctxT(t)
	node, _ := c.Node(ctx, "pve1")
	_, err := node.NewVirtualMachine(ctx, 100, opt("vmgenid", "1"))
	mustContain(t, err, "500 only root can set 'vmgenid' config")
	_, err = node.NewVirtualMachine(ctx, 100, opt("serial0", "/dev/ttyS0"))
	mustContain(t, err, "500 only root can set 'serial0' config for real devices")
	task, err := node.NewVirtualMachine(ctx, 100, opt("serial0", "socket"), opt("tags", "a"), opt("net0", "virtio"), opt("ipconfig0", "ip=dhcp"))
	if err != nil {
		t.Fatal(err)
	}
	waitOK(t, ctx, task)
	vm, _ := node.VirtualMachine(ctx, 100)
	mustContain(t, vm.ConfigSync(ctx, opt("args", "-no-reboot")), "500 only root can set 'args' config")
	mustContain(t, vm.ConfigSync(ctx, opt("delete", "hookscript")), "500 only root can set 'hookscript' config")
	if err := vm.ConfigSync(ctx, opt("cores", 2), opt("delete", "tags")); err != nil {
		t.Fatal(err)
	}
	_, err = vm.Config(ctx, opt("skiplock", 1), opt("cores", 3))
	mustContain(t, err, `"skiplock":"Only root may use this option."`)
}
