package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
)

// checkTalosctlWithoutNodes runs the real talosctl (make tools) with a
// talosconfig output and no --endpoints or --nodes, as a user would after
// `pulumi stack output talosconfig > talosconfig`: commands that need one
// control plane (kubeconfig, etcd members) must work on the defaults the
// output sets. firstCP is the address the default node must be.
func checkTalosctlWithoutNodes(t *testing.T, talosconfig, firstCP string) {
	t.Helper()
	bin := filepath.Join(harness.ToolsBin(t), "talosctl")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("talosctl not found at %s: run `make tools`", bin)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "talosconfig")
	if err := os.WriteFile(cfg, []byte(talosconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{"--talosconfig", cfg}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+dir, "TALOSCONFIG="+cfg, "NO_COLOR=1")
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Errorf("talosctl %s without -n: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
		}
		return out.String()
	}

	if out := run("version"); !strings.Contains(out, "NODE:        "+firstCP) || strings.Count(out, "NODE:") != 1 {
		t.Errorf("talosctl version: want the first control plane %s as the one default node:\n%s", firstCP, out)
	}
	if out := run("etcd", "members"); !strings.Contains(out, firstCP) {
		t.Errorf("talosctl etcd members: want the members as the first control plane sees them:\n%s", out)
	}
	kc := filepath.Join(dir, "kubeconfig")
	run("kubeconfig", kc)
	if b, err := os.ReadFile(kc); err != nil || !strings.Contains(string(b), "server: https://") {
		t.Errorf("talosctl kubeconfig wrote no kubeconfig: %v\n%s", err, b)
	}
}
