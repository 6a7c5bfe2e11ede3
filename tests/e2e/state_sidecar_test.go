package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
)

// What docs/resources.md says about a CLI killed while the file backend
// writes: "failed to load checkpoint: EOF" is the stack file's `.attrs`
// sidecar left empty (gocloud fileblob truncates it in place before it
// renames the new checkpoint into place; a kill between the two leaves
// exactly this), not the state; deleting the empty sidecar recovers the
// stack as it was; and with `?metadata=skip` (harness.Env.KillSafe) the
// backend writes no sidecar at all, so no kill can leave one empty. It
// guards the advice against a Pulumi that writes its backend otherwise.
func TestFileBackendSidecarAdvice(t *testing.T) {
	t.Parallel()
	const program = "outputs:\n  greeting: hello\n"
	env := harness.NewEnv(t)
	p := harness.NewYAMLProject(t, env, "sidecar", program)
	if r := p.Up(t); r.ExitCode != 0 {
		t.Fatalf("up: %s", r)
	}
	attrs := filepath.Join(env.Backend, ".pulumi", "stacks", "sidecar", "test.json.attrs")
	if err := os.WriteFile(attrs, nil, 0o644); err != nil {
		t.Fatalf("the stack file's sidecar (%v): is it still where Pulumi's file backend writes it?", err)
	}
	if r := p.Run(t, "stack", "export"); r.ExitCode == 0 || !strings.Contains(r.Output(), "error: failed to load checkpoint: EOF") {
		t.Fatalf("stack export with an empty sidecar, want `failed to load checkpoint: EOF`: %s", r)
	}
	// the documented recovery: find .pulumi -name '*.attrs' -size 0 -delete
	for _, f := range sidecars(t, env.Backend, true) {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	if r := p.Preview(t, "--expect-no-changes"); r.ExitCode != 0 {
		t.Fatalf("preview after the empty sidecar was deleted: %s", r)
	}
	if out := p.MustRun(t, "stack", "output", "greeting"); strings.TrimSpace(out.Stdout) != "hello" {
		t.Fatalf("the stack's output after the recovery: %q", out.Stdout)
	}

	safe := harness.NewEnv(t)
	safe.KillSafe()
	q := harness.NewYAMLProject(t, safe, "sidecar", program)
	for _, args := range [][]string{{"up", "--yes", "--skip-preview"}, {"preview", "--expect-no-changes"}, {"stack", "export"}} {
		if r := q.Run(t, args...); r.ExitCode != 0 {
			t.Fatalf("with %s: %s", safe.BackendURL(), r)
		}
	}
	if a := sidecars(t, safe.Backend, false); len(a) > 0 {
		t.Fatalf("with %s the backend still writes sidecars: %v", safe.BackendURL(), a)
	}
}

// sidecars lists fileblob's `.attrs` files under dir (only the empty ones
// with empty).
func sidecars(t *testing.T, dir string, empty bool) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".attrs") {
			return err
		}
		info, err := d.Info()
		if err == nil && (!empty || info.Size() == 0) {
			out = append(out, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
