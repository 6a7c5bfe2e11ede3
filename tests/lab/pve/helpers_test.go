package pve

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
)

// startLab starts a lab at time scale 0 and a go-proxmox client that
// verifies the lab's certificate against its CA.
func startLab(t *testing.T, opts Options) (*Server, *proxmox.Client) {
	t.Helper()
	if opts.Seed == 0 {
		opts.Seed = 42
	}
	s, err := Start(opts)
	if err != nil {
		t.Fatalf("start lab: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.CACertPEM()) {
		t.Fatal("lab CA PEM does not parse")
	}
	id, secret, _ := strings.Cut(s.APIToken(), "=")
	c := proxmox.NewClient(s.APIURL(), proxmox.WithAPIToken(id, secret), proxmox.WithRootCAs(pool), proxmox.WithHTTPClient(&http.Client{Timeout: 30 * time.Second}))
	return s, c
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitOK waits for a task with a short poll and requires exit status OK.
func waitOK(t *testing.T, ctx context.Context, task *proxmox.Task) {
	t.Helper()
	if task == nil {
		t.Fatal("no task returned")
	}
	if err := task.Wait(ctx, 5*time.Millisecond, 30*time.Second); err != nil {
		t.Fatalf("wait for %s: %v", task.UPID, err)
	}
	if task.ExitStatus != "OK" {
		log, _ := task.Log(ctx, 0, 100)
		t.Fatalf("task %s ended with %q, log: %v", task.UPID, task.ExitStatus, log)
	}
}

// waitExit waits for a task and returns its exit status.
func waitExit(t *testing.T, ctx context.Context, task *proxmox.Task) string {
	t.Helper()
	if err := task.Wait(ctx, 5*time.Millisecond, 30*time.Second); err != nil {
		t.Fatalf("wait for %s: %v", task.UPID, err)
	}
	return task.ExitStatus
}

func opt(name string, value any) proxmox.VirtualMachineOption {
	return proxmox.VirtualMachineOption{Name: name, Value: value}
}

// mustContain fails unless err's text contains want.
func mustContain(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("expected an error containing %q, got nil", want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not contain %q", err.Error(), want)
	}
}

// createTemplateForTest puts a template with one base disk on pve1
// directly (no API, no time spent).
func (s *Server) createTemplateForTest(vmid int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.node("pve1").storage("local-lvm")
	name := fmt.Sprintf("base-%d-disk-0", vmid)
	if _, err := s.allocVolumeLocked(st, vmid, name, "raw", 2<<30); err != nil {
		return err
	}
	s.vms[vmid] = &vm{vmid: vmid, node: "pve1", pending: map[string]string{}, delete: map[string]bool{}, conf: map[string]string{
		"name": "tmpl", "template": "1", "scsi0": "local-lvm:" + name + ",size=2G", "net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0",
		"smbios1": "uuid=" + newUUID(s.rng), "boot": "order=scsi0",
	}}
	return nil
}

// holdClonesForTest makes every clone started from now on wait in the
// middle of its copy (locks held, "lock: clone") until release is closed;
// copying names each one as it gets there.
func (s *Server) holdClonesForTest(n int) *cloneHold {
	h := &cloneHold{copying: make(chan int, n), release: make(chan struct{})}
	s.mu.Lock()
	s.cloneHold = h
	s.mu.Unlock()
	return h
}
