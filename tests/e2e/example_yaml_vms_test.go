package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
)

// examples/yaml-vms (plain VMs; `make demo DEMO_EXAMPLE=examples/yaml-vms` runs it, the
// default demo is examples/yaml-cluster, see TestExampleYAMLCluster) works as a user runs
// it: up creates its VMs in the lab with the addresses their guest agents report, a second
// preview shows no change, and destroy leaves the lab empty (no VM, no volume).
func TestExampleYAMLVMs(t *testing.T) {
	t.Parallel()
	env := harness.NewEnv(t)
	l, labConfig := harness.StartLab(t, lab.Options{})

	src, err := os.ReadFile(filepath.Join(harness.RepoRoot(t), "examples", "yaml-vms", "Pulumi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The example finds the provider in ../../bin; here it is the test's build.
	program := strings.Replace(string(src), "path: ../../bin", "path: "+env.ProviderDir, 1)
	if program == string(src) {
		t.Fatal("examples/yaml-vms/Pulumi.yaml no longer points plugins.providers at ../../bin; update this test")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Pulumi.yaml"), []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	p := harness.OpenYAMLProject(t, env, dir)
	p.ConfigureLab(t, labConfig)
	prefix := l.AddressPrefix()
	p.SetConfig(t, "addressPrefix", prefix, false)

	if r := p.Up(t); r.ExitCode != 0 {
		t.Fatalf("up: %s", r)
	}
	vms := l.VMs()
	if len(vms) != 3 {
		t.Fatalf("the lab holds %d VMs after up, want 3", len(vms))
	}
	out := p.MustRun(t, "stack", "output", "vms", "--json").Stdout
	for i := 1; i <= 3; i++ {
		if want := fmt.Sprintf("%s.1%d", prefix, i); !strings.Contains(out, `"`+want+`"`) {
			t.Errorf("the vms output lacks the agent-reported address %s:\n%s", want, out)
		}
	}
	if r := p.Preview(t, "--expect-no-changes"); r.ExitCode != 0 {
		t.Errorf("second preview reports changes: %s", r)
	}
	if r := p.Destroy(t); r.ExitCode != 0 {
		t.Fatalf("destroy: %s", r)
	}
	(&exampleLab{Lab: l, Conn: labConfig}).requireEmpty(t)
}
