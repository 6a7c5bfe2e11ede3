package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// CommandTimeout bounds one CLI run; a hung run fails the test with its output so far.
var CommandTimeout = 10 * time.Minute

// Project is a Pulumi YAML project folder with one selected stack in an Env.
type Project struct {
	Env   *Env
	Dir   string
	Stack string
	// Extra variables for every run of this project only (ConfigureLab
	// puts the lab's provider variables here), after Env's: projects of
	// one Env may be configured for different labs.
	Extra map[string]string
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

// ConfigureLab sets the provider configuration for the lab on the stack: the plaintext
// values straight into the stack's settings file (SetPlainConfig), the token with one
// `pulumi config set --secret` that reads it on stdin (so that it never appears in a process
// listing) and encrypts it. One CLI run instead of one per value: each costs about a
// CPU-second. The lab's provider environment variables (Lab.VMWatchScale) go into this
// project's Extra, not the Env's, which other projects share; a lab without them (a real
// host) removes them.
func (p *Project) ConfigureLab(t testing.TB, lab Lab) {
	t.Helper()
	if p.Extra == nil {
		p.Extra = map[string]string{}
	}
	delete(p.Extra, EnvVMWatchScale)
	for k, v := range lab.vars() {
		p.Extra[k] = v
	}
	plain := map[string]string{"proxmoxtalos:endpoint": lab.Endpoint}
	if lab.CACert != "" {
		plain["proxmoxtalos:caCert"] = lab.CACert
	}
	p.SetPlainConfig(t, plain)
	p.SetConfig(t, "proxmoxtalos:apiToken", lab.APIToken, true)
}

// SetPlainConfig writes plaintext stack config values (full keys, "namespace:name") into
// the stack's settings file, Pulumi.<stack>.yaml beside Pulumi.yaml, where `pulumi config
// set` without --secret puts them (a "config" map of strings; pulumi/pulumi
// sdk/go/common/workspace/project.go, ProjectStack), keeping what the file holds (the
// secrets provider's salt, other values). Never a secret: the CLI encrypts those (SetConfig).
func (p *Project) SetPlainConfig(t testing.TB, values map[string]string) {
	t.Helper()
	path := filepath.Join(p.Dir, "Pulumi."+p.Stack+".yaml")
	doc := map[string]any{}
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	if doc == nil {
		doc = map[string]any{}
	}
	cfg, _ := doc["config"].(map[string]any)
	if cfg == nil {
		cfg = map[string]any{}
	}
	for k, v := range values {
		cfg[k] = v
	}
	doc["config"] = cfg
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
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
	r := p.start(t, stdin, nil, args...)
	return r.Wait(t)
}

// RunWith is Run with extra environment variables for this run only (and
// so for the plugins the CLI starts), for example a test hook.
func (p *Project) RunWith(t testing.TB, vars map[string]string, args ...string) Result {
	t.Helper()
	return p.start(t, nil, vars, args...).Wait(t)
}

// Start runs the CLI in the background, with extra environment variables
// (may be nil): the test can watch it, kill it, and wait for it.
func (p *Project) Start(t testing.TB, vars map[string]string, args ...string) *Running {
	t.Helper()
	return p.start(t, nil, vars, args...)
}

func (p *Project) start(t testing.TB, stdin io.Reader, vars map[string]string, args ...string) *Running {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), CommandTimeout)
	full := append([]string{"--non-interactive"}, args...)
	if needsStack(args) {
		full = append(full, "--stack", p.Stack)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(p.Env.ToolsBin, "pulumi"), full...)
	cmd.Dir = p.Dir
	cmd.Env = p.Env.Environ()
	for k, v := range p.Extra {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdin = stdin
	r := &Running{args: full, cmd: cmd, ctx: ctx, cancel: cancel, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &r.stdout, &r.stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("running pulumi %s: %v", strings.Join(full, " "), err)
	}
	go func() {
		r.err = cmd.Wait()
		close(r.done)
	}()
	return r
}

// Running is a CLI run in the background.
type Running struct {
	args           []string
	cmd            *exec.Cmd
	ctx            context.Context
	cancel         context.CancelFunc
	stdout, stderr lockedBuffer
	done           chan struct{}
	err            error
}

// PID is the CLI's process id.
func (r *Running) PID() int { return r.cmd.Process.Pid }

// Output is what the CLI printed so far (stdout and stderr).
func (r *Running) Output() string { return r.stdout.String() + r.stderr.String() }

// Kill sends SIGKILL to the CLI process only, as an OOM kill or a lost CI
// runner does: the plugins it started are left to notice by themselves.
func (r *Running) Kill(t testing.TB) {
	t.Helper()
	if err := r.cmd.Process.Kill(); err != nil {
		t.Fatalf("killing pulumi %s: %v", strings.Join(r.args, " "), err)
	}
}

// Wait waits for the run to end. A killed run is not a failure (its exit
// code is -1).
func (r *Running) Wait(t testing.TB) Result {
	t.Helper()
	<-r.done
	defer r.cancel()
	res := Result{Args: r.args, Stdout: r.stdout.String(), Stderr: r.stderr.String()}
	var exit *exec.ExitError
	switch {
	case r.ctx.Err() != nil:
		t.Fatalf("pulumi %s did not finish within %s\n%s", strings.Join(r.args, " "), CommandTimeout, res)
	case errors.As(r.err, &exit):
		res.ExitCode = exit.ExitCode()
	case r.err != nil:
		t.Fatalf("running pulumi %s: %v", strings.Join(r.args, " "), r.err)
	}
	return res
}

// lockedBuffer is a bytes.Buffer safe to read while the CLI writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
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
