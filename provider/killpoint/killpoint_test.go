package killpoint

import (
	"os"
	"os/exec"
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
