package talos

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// talosctlBin is the real talosctl (make tools builds it into .tools/bin;
// PROXMOXTALOS_TALOSCTL overrides). Missing, the test fails, or is skipped
// with PROXMOXTALOS_E2E=0 like the other tests that need built tools.
func talosctlBin(t *testing.T) string {
	t.Helper()

	if p := os.Getenv("PROXMOXTALOS_TALOSCTL"); p != "" {
		return p
	}

	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}

	for d := dir; filepath.Dir(d) != d; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil &&
			strings.HasPrefix(string(b), "module github.com/proxmoxtalos/proxmoxtalos\n") {
			bin := filepath.Join(d, ".tools", "bin", "talosctl")
			if _, err := os.Stat(bin); err != nil {
				if os.Getenv("PROXMOXTALOS_E2E") == "0" {
					t.Skipf("PROXMOXTALOS_E2E=0 and %s is missing: skipping the talosctl tests", bin)
				}

				t.Fatalf("talosctl not found at %s: run `make tools` (or set PROXMOXTALOS_E2E=0 to skip)", bin)
			}

			return bin
		}
	}

	t.Fatalf("no repository root above %s", dir)

	return ""
}

// talosctl runs the real client with a talosconfig, against one endpoint.
type talosctl struct {
	bin    string
	config string // talosconfig path
	home   string
}

func newTalosctl(t *testing.T, tc *testCluster) *talosctl {
	t.Helper()

	bin := talosctlBin(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "talosconfig")

	if err := tc.tc.Save(path); err != nil {
		t.Fatal(err)
	}

	return &talosctl{bin: bin, config: path, home: dir}
}

// exec runs talosctl against node through endpoint; each run is bounded.
func (x *talosctl) exec(t *testing.T, endpoint, node netip.Addr, args ...string) (stdout, stderr string, err error) {
	t.Helper()

	return x.execUntil(t, nil, endpoint, node, args...)
}

// execUntil runs talosctl (bounded as exec) and, with until set, stops it
// as soon as its output so far satisfies until: for commands that follow a
// stream until interrupted, like events or get --watch. The caller then
// asserts on that output; a stream that never shows it runs into the bound.
func (x *talosctl) execUntil(t *testing.T, until func(stdout string) bool, endpoint, node netip.Addr, args ...string) (stdout, stderr string, err error) {
	t.Helper()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	full := []string{"--talosconfig", x.config}
	if endpoint.IsValid() {
		full = append(full, "--endpoints", endpoint.String())
	}

	if node.IsValid() {
		full = append(full, "--nodes", node.String())
	}

	cmd := exec.CommandContext(ctx, x.bin, append(full, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+x.home, "TALOSCONFIG="+x.config, "NO_COLOR=1")

	out := &untilBuffer{until: until, stop: cancel}

	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &errOut

	err = cmd.Run()

	return out.String(), errOut.String(), err
}

// untilBuffer is a command's stdout that calls stop once what it holds
// satisfies until (nil: never).
type untilBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	until func(string) bool
	stop  func()
}

func (u *untilBuffer) Write(p []byte) (int, error) {
	u.mu.Lock()
	defer u.mu.Unlock()

	n, err := u.b.Write(p)
	if u.until != nil && u.until(u.b.String()) {
		u.stop()
	}

	return n, err
}

func (u *untilBuffer) String() string {
	u.mu.Lock()
	defer u.mu.Unlock()

	return u.b.String()
}

// run is exec that must succeed; it returns stdout.
func (x *talosctl) run(t *testing.T, endpoint, node netip.Addr, args ...string) string {
	t.Helper()

	out, _ := x.runBoth(t, endpoint, node, args...)

	return out
}

// runBoth is exec that must succeed; it returns stdout and stderr (where
// talosctl reports progress and apply results).
func (x *talosctl) runBoth(t *testing.T, endpoint, node netip.Addr, args ...string) (string, string) {
	t.Helper()

	out, errOut, err := x.exec(t, endpoint, node, args...)
	if err != nil {
		t.Fatalf("talosctl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}

	return out, errOut
}

// contains fails unless out holds every want.
func contains(t *testing.T, what, out string, want ...string) {
	t.Helper()

	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s: output lacks %q:\n%s", what, w, out)
		}
	}
}

// containsAll reports whether out holds every string of want.
func containsAll(out string, want ...string) bool {
	for _, w := range want {
		if !strings.Contains(out, w) {
			return false
		}
	}

	return true
}

// row is the first line of a table output that holds every field given.
func row(out string, fields ...string) (string, bool) {
	for line := range strings.SplitSeq(out, "\n") {
		f := strings.Fields(line)
		all := true

		for _, want := range fields {
			found := false

			for _, got := range f {
				if got == want {
					found = true
				}
			}

			all = all && found
		}

		if all {
			return line, true
		}
	}

	return "", false
}

func mustRow(t *testing.T, what, out string, fields ...string) string {
	t.Helper()

	line, ok := row(out, fields...)
	if !ok {
		t.Errorf("%s: no row with %q:\n%s", what, fields, out)
	}

	return line
}

func hexMAC(addr netip.Addr) string {
	return fmt.Sprintf("bc:24:11:00:00:%02x", addr.As4()[3])
}
