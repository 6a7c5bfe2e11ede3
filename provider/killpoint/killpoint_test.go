package killpoint

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for spec, want := range map[string]struct {
		name string
		nth  int
	}{
		"after-start": {"after-start", 1}, "after-start#3": {"after-start", 3}, " after-config#x ": {"after-config", 1},
	} {
		if name, nth := parse(spec); name != want.name || nth != want.nth {
			t.Errorf("%q: %s#%d", spec, name, nth)
		}
	}
}

// Unset, or naming another point, the hook does nothing; naming this
// point, the second time it is reached with #2, it kills the process.
func TestReach(t *testing.T) {
	if os.Getenv("KILLPOINT_CHILD") == "1" {
		Reach("after-config")
		Reach("after-start")
		println("passed the first after-start")
		Reach("after-start")
		println("passed the second after-start")
		return
	}
	t.Setenv(EnvVar, "")
	Reach("after-start") // unset: a no-op
	cmd := exec.Command(os.Args[0], "-test.run=^TestReach$")
	cmd.Env = append(os.Environ(), "KILLPOINT_CHILD=1", EnvVar+"=after-start#2")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "passed the first") || strings.Contains(string(out), "passed the second") ||
		!strings.Contains(string(out), "killing the provider") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// With the CLI as the target, the hook kills its parent when that is a
// program named pulumi (here a copy of the test binary so named), and
// leaves any other parent alone.
func TestReachKillsTheCLI(t *testing.T) {
	switch os.Getenv("KILLPOINT_ROLE") {
	case "cli": // the parent: start the provider and wait for it
		child := exec.Command(os.Args[0], "-test.run=^TestReachKillsTheCLI$")
		child.Env = append(os.Environ(), "KILLPOINT_ROLE=provider")
		child.Stdout, child.Stderr = os.Stdout, os.Stderr
		_ = child.Run()
		println("the CLI outlived the kill point")
		return
	case "provider":
		Reach("after-start")
		println("the provider went on")
		return
	}
	pulumi := filepath.Join(t.TempDir(), "pulumi")
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pulumi, self, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		bin    string
		killed bool
	}{{pulumi, true}, {os.Args[0], false}} {
		cmd := exec.Command(c.bin, "-test.run=^TestReachKillsTheCLI$")
		cmd.Env = append(os.Environ(), "KILLPOINT_ROLE=cli", EnvVar+"=after-start", TargetVar+"=cli")
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		signaled := errors.As(err, &exit) && exit.ExitCode() == -1
		if signaled != c.killed || strings.Contains(string(out), "outlived") == c.killed {
			t.Errorf("parent %s: killed %v, want %v: %v\n%s", filepath.Base(c.bin), signaled, c.killed, err, out)
		}
	}
}
