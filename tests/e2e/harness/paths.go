package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const modulePath = "github.com/proxmoxtalos/proxmoxtalos"

var (
	rootOnce sync.Once
	root     string
	rootErr  error
)

// RepoRoot is the repository root: the nearest parent of the working directory whose
// go.mod declares the project's module.
func RepoRoot(t testing.TB) string {
	t.Helper()
	rootOnce.Do(func() { root, rootErr = findRoot() })
	if rootErr != nil {
		t.Fatal(rootErr)
	}
	return root
}

func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil &&
			strings.HasPrefix(string(b), "module "+modulePath+"\n") {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod of module %s above %s: run the tests inside the repository", modulePath, dir)
		}
	}
}

// ToolsBin is the folder holding the Pulumi CLI and the YAML language host (make tools).
// When they are missing the test fails, or is skipped if PROXMOXTALOS_E2E=0.
func ToolsBin(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(RepoRoot(t), ".tools", "bin")
	for _, tool := range []string{"pulumi", "pulumi-language-yaml"} {
		if _, err := os.Stat(filepath.Join(bin, tool)); err != nil {
			if os.Getenv("PROXMOXTALOS_E2E") == "0" {
				t.Skipf("PROXMOXTALOS_E2E=0 and %s is missing: skipping e2e test", tool)
			}
			t.Fatalf("%s not found in %s: run `make tools` (or set PROXMOXTALOS_E2E=0 to skip e2e tests)", tool, bin)
		}
	}
	return bin
}
