package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// CommandTimeout bounds one CLI run; a hung run fails the test with its output so far.
var CommandTimeout = 10 * time.Minute

// Project is a Pulumi YAML project folder with one selected stack in an Env.
type Project struct {
	Env   *Env
	Dir   string
	Stack string
}

// Result is one CLI run.
type Result struct {
	Args     []string
	Stdout   string
	Stderr   string
	ExitCode int
}

// Output is stdout and stderr together, for assertions and failure messages.
func (r Result) Output() string { return r.Stdout + r.Stderr }

func (r Result) String() string {
	return fmt.Sprintf("pulumi %s: exit %d\n--- stdout\n%s--- stderr\n%s", strings.Join(r.Args, " "), r.ExitCode, r.Stdout, r.Stderr)
}

// NewYAMLProject writes a Pulumi YAML project (Pulumi.yaml with the given name, the
// provider found by plugins.providers[].path, and body appended verbatim: resources,
// outputs, config...) into a fresh folder and creates and selects the stack "test".
func NewYAMLProject(t testing.TB, env *Env, name, body string) *Project {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := &Project{Env: env, Dir: dir, Stack: "test"}
	p.WriteProgram(t, name, body)
	p.MustRun(t, "stack", "init", p.Stack)
	return p
}

// OpenYAMLProject uses an existing project folder (for example one under examples/,
// copied by the caller if the test must not write into the repository) and creates and
// selects the stack "test". The folder's Pulumi.yaml must point plugins.providers at the
// provider (see ProjectFile).
func OpenYAMLProject(t testing.TB, env *Env, dir string) *Project {
	t.Helper()
	p := &Project{Env: env, Dir: dir, Stack: "test"}
	p.MustRun(t, "stack", "init", p.Stack)
	return p
}

// ProjectFile is the text of a Pulumi.yaml for a YAML program that uses this environment's
// provider binary.
func (e *Env) ProjectFile(name, body string) string {
	return fmt.Sprintf(`name: %s
runtime: yaml
plugins:
  providers:
    - name: proxmoxtalos
      path: %s
%s`, name, e.ProviderDir, body)
}

// WriteProgram replaces Pulumi.yaml, for tests that change the program between runs.
func (p *Project) WriteProgram(t testing.TB, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(p.Dir, "Pulumi.yaml"), []byte(p.Env.ProjectFile(name, body)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ConfigureLab sets the provider configuration for the lab on the stack. Values are passed
// on stdin so that the token never appears in a process listing.
func (p *Project) ConfigureLab(t testing.TB, lab Lab) {
	t.Helper()
	p.SetConfig(t, "proxmoxtalos:endpoint", lab.Endpoint, false)
	p.SetConfig(t, "proxmoxtalos:apiToken", lab.APIToken, true)
	if lab.CACert != "" {
		p.SetConfig(t, "proxmoxtalos:caCert", lab.CACert, false)
	}
}

// SetConfig sets one stack config value (read from stdin by the CLI).
func (p *Project) SetConfig(t testing.TB, key, value string, secret bool) {
	t.Helper()
	args := []string{"config", "set", key}
	if secret {
		args = append(args, "--secret")
	}
	if r := p.RunInput(t, strings.NewReader(value), args...); r.ExitCode != 0 {
		t.Fatalf("setting config %s: %s", key, r)
	}
}

// Up runs `pulumi up --yes` with extra args.
func (p *Project) Up(t testing.TB, args ...string) Result {
	return p.Run(t, append([]string{"up", "--yes", "--skip-preview"}, args...)...)
}

// Preview runs `pulumi preview` with extra args (for example --diff, --expect-no-changes).
func (p *Project) Preview(t testing.TB, args ...string) Result {
	return p.Run(t, append([]string{"preview"}, args...)...)
}

// Refresh runs `pulumi refresh --yes` with extra args.
func (p *Project) Refresh(t testing.TB, args ...string) Result {
	return p.Run(t, append([]string{"refresh", "--yes"}, args...)...)
}

// Destroy runs `pulumi destroy --yes` with extra args.
func (p *Project) Destroy(t testing.TB, args ...string) Result {
	return p.Run(t, append([]string{"destroy", "--yes"}, args...)...)
}

// Import runs `pulumi import --yes <type> <name> <id>` with extra args.
func (p *Project) Import(t testing.TB, typ, name, id string, args ...string) Result {
	return p.Run(t, append([]string{"import", "--yes", typ, name, id}, args...)...)
}

// StackExport returns `pulumi stack export` (the state as JSON, secrets encrypted).
func (p *Project) StackExport(t testing.TB) string {
	t.Helper()
	return p.MustRun(t, "stack", "export").Stdout
}

// Run runs the CLI in the project folder with --non-interactive (and the stack selected by
// NewYAMLProject). A non-zero exit is returned, not fatal: tests of refusals need it.
func (p *Project) Run(t testing.TB, args ...string) Result {
	t.Helper()
	return p.RunInput(t, nil, args...)
}

// MustRun is Run that fails the test on a non-zero exit.
func (p *Project) MustRun(t testing.TB, args ...string) Result {
	t.Helper()
	r := p.Run(t, args...)
	if r.ExitCode != 0 {
		t.Fatalf("%s", r)
	}
	return r
}

// RunInput is Run with stdin.
func (p *Project) RunInput(t testing.TB, stdin io.Reader, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), CommandTimeout)
	defer cancel()
	full := append([]string{"--non-interactive"}, args...)
	if needsStack(args) {
		full = append(full, "--stack", p.Stack)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(p.Env.ToolsBin, "pulumi"), full...)
	cmd.Dir = p.Dir
	cmd.Env = p.Env.Environ()
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := Result{Args: full, Stdout: stdout.String(), Stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("pulumi %s did not finish within %s\n%s", strings.Join(full, " "), CommandTimeout, r)
	case errors.As(err, &exit):
		r.ExitCode = exit.ExitCode()
	case err != nil:
		t.Fatalf("running pulumi %s: %v", strings.Join(full, " "), err)
	}
	return r
}

// needsStack tells whether a command takes --stack (everything but stack init, which
// names the stack itself, and package commands, which have no stack).
func needsStack(args []string) bool {
	if len(args) == 0 {
		return false
	}
	switch args[0] {
	case "package", "version", "plugin", "about", "login", "logout", "whoami", "new":
		return false
	case "stack":
		return !(len(args) > 1 && (args[1] == "init" || args[1] == "ls"))
	}
	return true
}
