package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Lab is what a stack needs to reach a Proxmox VE API: the lab's (or a real host's)
// endpoint, API token (USER@REALM!TOKENID=SECRET) and the PEM CA that signed its
// certificate. They become the stack config proxmoxtalos:endpoint, proxmoxtalos:apiToken
// (secret) and proxmoxtalos:caCert.
type Lab struct {
	Endpoint string
	APIToken string
	CACert   string
	// VMWatchScale, when set, becomes the provider's PROXMOXTALOS_VM_WATCH_SCALE in the
	// environments of the stacks configured for this lab (ConfigureLab, InlineStack):
	// VMWatchScaleFor the lab's time scale. 0 leaves the provider's default (a real host).
	VMWatchScale float64
}

// Passphrase encrypts the secrets of every test stack (file backend, passphrase provider).
const Passphrase = "proxmoxtalos-e2e-passphrase"

// Env is one hermetic Pulumi environment: its own PULUMI_HOME and file backend under the
// test's temp dir, the project's CLI first on PATH, no plugin downloads, no ambient plugins.
type Env struct {
	Home        string // PULUMI_HOME
	Backend     string // folder of the file backend
	ToolsBin    string // .tools/bin
	ProviderDir string // folder with pulumi-resource-proxmoxtalos
	// killSafe: see KillSafe.
	killSafe bool
	// Extra variables for every run in this environment (for example PULUMI_DEBUG_GRPC to
	// capture the provider's gRPC traffic in a secret scan). They win over the defaults.
	Extra map[string]string
}

// NewEnv prepares a hermetic environment for one test.
func NewEnv(t testing.TB) *Env {
	t.Helper()
	e := &Env{
		Home:        filepath.Join(t.TempDir(), "pulumi-home"),
		Backend:     filepath.Join(t.TempDir(), "backend"),
		ToolsBin:    ToolsBin(t),
		ProviderDir: ProviderDir(t),
	}
	for _, d := range []string{e.Home, e.Backend} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// KillSafe makes the file backend write no metadata sidecar files, as
// docs/resources.md tells users whose CLI may be killed: gocloud's fileblob
// (v0.46, which pulumi v3.274.1 uses) writes each blob to a temporary file
// and renames it, but rewrites the blob's `.attrs` sidecar in place first
// (attrs.go setAttrs: os.Create, which truncates, then the JSON), and reads
// it before the blob (fileblob.go forKey → getAttrs). A CLI killed between
// the two leaves the stack's `.json.attrs` empty, and every later command
// fails with "failed to load checkpoint: EOF" although the state is whole.
// With `?metadata=skip` nothing is written outside the rename. Tests that
// kill the CLI use it; the others keep Pulumi's default.
func (e *Env) KillSafe() { e.killSafe = true }

// BackendURL is this environment's PULUMI_BACKEND_URL.
func (e *Env) BackendURL() string {
	u := "file://" + filepath.ToSlash(e.Backend)
	if e.killSafe {
		u += "?metadata=skip"
	}
	return u
}

// Vars are the Pulumi variables of this environment.
func (e *Env) Vars() map[string]string {
	vars := map[string]string{
		"PULUMI_HOME":                                 e.Home,
		"PULUMI_BACKEND_URL":                          e.BackendURL(),
		"PULUMI_CONFIG_PASSPHRASE":                    Passphrase,
		"PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
		"PULUMI_IGNORE_AMBIENT_PLUGINS":               "true",
		"PULUMI_SKIP_UPDATE_CHECK":                    "true",
		"PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK":    "true",
		"PULUMI_DIY_BACKEND_NO_LEGACY_WARNING":        "true",
		"NO_COLOR":                                    "1",
	}
	for k, v := range e.Extra {
		vars[k] = v
	}
	return vars
}

// Environ is the process environment for a CLI run: the machine's environment without any
// PULUMI_* variable (an ambient token or backend must not leak in), plus Vars, with the
// project's tools first on PATH.
func (e *Env) Environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "PULUMI_") || name == "PATH" {
			continue
		}
		env = append(env, kv)
	}
	for k, v := range e.Vars() {
		env = append(env, k+"="+v)
	}
	return append(env, "PATH="+e.ToolsBin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func getenv(k string) string { return os.Getenv(k) }
