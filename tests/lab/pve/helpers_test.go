package pve

import (
	"context"
	"crypto/x509"
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
