package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
)

// Issue 6: a provider upgrade that does not change behaviour shows no change. The example
// cluster (examples/yaml-cluster) is created with the provider built as version X (the
// VERSION file) and previewed with the same code built as X with the patch number raised
// (the old build removed, so only the new one can answer): the preview must show no change
// (--expect-no-changes), nor a preview after refresh and up with the new build; the new build
// destroys the cluster.
//
// Two ways a user upgrades, each a subtest:
//   - pinned: the program names the provider version, as every generated SDK does for its
//     resources (the SDK package's version), so the default provider is
//     pulumi:providers:proxmoxtalos::default_X and becomes default_X+1. Pulumi v3.259.0
//     shows this as no change ("N unchanged", checked by hand: no provider step is
//     displayed or counted); the up moves every resource to the new default provider,
//     which the test checks in the state.
//   - unpinned: a YAML program without a version uses whatever plugin the project points
//     at (plugins.providers[].path); the default provider keeps its name.
//
// PROXMOXTALOS_UPGRADE_FROM=<folder> builds version X from another source tree instead (for
// example `git archive <ref> | tar -x -C <folder>`), so that a change of what the provider
// stores is checked against the state an earlier version wrote.
func TestProviderUpgradeShowsNoChanges(t *testing.T) {
	t.Parallel()
	repo := harness.RepoRoot(t)
	oldRepo := repo
	if dir := os.Getenv("PROXMOXTALOS_UPGRADE_FROM"); dir != "" {
		oldRepo = dir
	}
	raw, err := os.ReadFile(filepath.Join(repo, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	oldVersion := strings.TrimSpace(string(raw))
	newVersion, err := nextPatch(oldVersion)
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(repo, "examples", "yaml-cluster", "Pulumi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, pinned := range []bool{true, false} {
		name := map[bool]string{true: "pinned", false: "unpinned"}[pinned]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := harness.NewEnv(t)
			l := startExampleLab(t)
			oldDir, newDir := buildProviderAs(t, oldRepo, oldVersion), buildProviderAs(t, repo, newVersion)

			dir := t.TempDir()
			usePlugin := func(pluginDir, version string) {
				t.Helper()
				program := strings.Replace(string(src), "path: ../../bin", "path: "+pluginDir, 1)
				const cluster = "    type: proxmoxtalos:TalosCluster\n"
				if pinned {
					program = strings.Replace(program, cluster, cluster+"    options:\n      version: "+version+"\n", 1)
				}
				if !strings.Contains(program, "path: "+pluginDir) || !strings.Contains(program, cluster) {
					t.Fatal("examples/yaml-cluster/Pulumi.yaml no longer points plugins.providers at ../../bin " +
						"or has no TalosCluster named cluster; update this test")
				}
				if err := os.WriteFile(filepath.Join(dir, "Pulumi.yaml"), []byte(program), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			usePlugin(oldDir, oldVersion)
			p := harness.OpenYAMLProject(t, env, dir)
			p.ConfigureLab(t, l.Conn)
			p.SetConfig(t, "addressPrefix", l.AddressPrefix(), false)
			p.SetConfig(t, "factoryUrl", l.FactoryURL(), false)

			tcTimed(t, "up with "+oldVersion, func() harness.Result { return p.Up(t) })

			usePlugin(newDir, newVersion)
			if err := os.RemoveAll(oldDir); err != nil {
				t.Fatal(err)
			}
			if r := p.Preview(t, "--expect-no-changes", "--diff"); r.ExitCode != 0 {
				t.Fatalf("after upgrading the provider %s -> %s, preview reports changes:\n%s", oldVersion, newVersion, r)
			}
			tcTimed(t, "refresh with "+newVersion, func() harness.Result { return p.Refresh(t, "--expect-no-changes") })
			tcTimed(t, "up with "+newVersion, func() harness.Result { return p.Up(t, "--expect-no-changes") })
			tcTimed(t, "preview after up with "+newVersion, func() harness.Result { return p.Preview(t, "--expect-no-changes") })
			if pinned {
				state := p.StackExport(t)
				oldProvider := "pulumi:providers:proxmoxtalos::default_" + strings.ReplaceAll(oldVersion, ".", "_")
				newProvider := "pulumi:providers:proxmoxtalos::default_" + strings.ReplaceAll(newVersion, ".", "_")
				if strings.Contains(state, oldProvider) || !strings.Contains(state, newProvider) {
					t.Errorf("after up with %s the state should name only the default provider %s (not %s)", newVersion, newProvider, oldProvider)
				}
			}
			tcTimed(t, "destroy with "+newVersion, func() harness.Result { return p.Destroy(t) })
			l.requireEmpty(t)
		})
	}
}

// nextPatch is version with its patch number raised: 0.1.0 -> 0.1.1.
func nextPatch(version string) (string, error) {
	parts := strings.Split(version, ".")
	if len(parts) != 3 {
		return "", fmt.Errorf("VERSION %q is not MAJOR.MINOR.PATCH", version)
	}
	patch, err := strconv.Atoi(parts[2])
	if err != nil {
		return "", fmt.Errorf("VERSION %q: patch %q is not a number", version, parts[2])
	}
	return fmt.Sprintf("%s.%s.%d", parts[0], parts[1], patch+1), nil
}

// buildProviderAs builds the provider with version set the way the Makefile sets it
// (ldflags), into a folder of its own.
func buildProviderAs(t *testing.T, repo, version string) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, harness.BinaryName),
		"-ldflags", "-X github.com/proxmoxtalos/proxmoxtalos/provider/version.Version="+version,
		"./provider/cmd/"+harness.BinaryName)
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the provider as %s: %v\n%s", version, err, out)
	}
	return dir
}
