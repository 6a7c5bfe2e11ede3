package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// BinaryName is the provider plugin's file name; the CLI finds it by this name in the
// folder that plugins.providers[].path names.
const BinaryName = "pulumi-resource-proxmoxtalos"

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// ProviderDir returns a folder holding the provider binary, built once per test process.
// With PROXMOXTALOS_PROVIDER_BIN set (make test does), that binary is used instead.
func ProviderDir(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("PROXMOXTALOS_PROVIDER_BIN"); bin != "" {
		if filepath.Base(bin) != BinaryName {
			t.Fatalf("PROXMOXTALOS_PROVIDER_BIN=%s must name a file called %s", bin, BinaryName)
		}
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("PROXMOXTALOS_PROVIDER_BIN=%s: %v (run `make provider`)", bin, err)
		}
		abs, err := filepath.Abs(filepath.Dir(bin))
		if err != nil {
			t.Fatal(err)
		}
		return abs
	}
	repo := RepoRoot(t)
	buildOnce.Do(func() { buildDir, buildErr = build(repo) })
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildDir
}

// Main runs the package's tests and then removes the provider binary built for them. Call
// it from TestMain in every e2e test package: func TestMain(m *testing.M) { harness.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// build compiles the provider into a fresh temp folder shared by the tests of this process.
func build(repo string) (string, error) {
	dir, err := os.MkdirTemp("", "proxmoxtalos-provider-")
	if err != nil {
		return "", err
	}
	version, err := os.ReadFile(filepath.Join(repo, "VERSION"))
	if err != nil {
		return "", fmt.Errorf("reading VERSION: %w", err)
	}
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, BinaryName),
		"-ldflags", "-X "+modulePath+"/provider/version.Version="+strings.TrimSpace(string(version)),
		"./provider/cmd/"+BinaryName)
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the provider for e2e tests: %v\n%s", err, out)
	}
	return dir, nil
}
