package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
)

// A stack whose applies stored their health gates before the provider added
// keys to healthGate.vm (here: every key a recent provider added, stripped
// from the state's inputs and outputs, as an older provider left them): the
// first pulumi up updates each apply's state only, saying so once, and
// touches no node (no apply, no health check); the up after it settles the
// nodes (registered as their create did), and a no-op preview then makes
// the CLI write no state (review s14c S3: before, the old gates stayed and
// no node was settled again).
func TestClusterWithOldGatesSettlesAgain(t *testing.T) {
	t.Parallel()
	l := startTCLab(t)
	env := harness.NewEnv(t)
	p := harness.NewYAMLProject(t, env, "cluster", l.program(1, 1).render(t))
	p.ConfigureLab(t, l.conn)
	tcTimed(t, "create 1+1", func() harness.Result { return p.Up(t) })

	stripGateKeys(t, p, "diskStorage", "dataDisks", "diskSize")
	// what a node logs when it is given a configuration, upgraded or reset
	applies := regexp.MustCompile(`machine configuration received|apply config request|(upgrade|reset) request received`)
	before := len(l.logLines(applies))
	if before == 0 {
		t.Fatal("the lab logged no configuration applied by the create: the check below tests nothing")
	}
	up := tcTimed(t, "up with old gates", func() harness.Result { return p.Up(t) })
	// once in the diagnostics (the progress rows repeat a resource's last line)
	if n := len(regexp.MustCompile(`(?m)^\s+node [^\n]*state only, no node is touched`).FindAllString(up.Output(), -1)); n != 1 {
		t.Errorf("the state-only update is explained %d times, want once:\n%s", n, up.Output())
	}
	if !strings.Contains(up.Output(), "2 updated") {
		t.Errorf("the applies were not updated:\n%s", up.Output())
	}
	if strings.Contains(up.Output(), "cluster healthy") || len(l.logLines(applies)) != before {
		t.Errorf("the state-only update applied a configuration or checked health:\n%s", up.Output())
	}

	// The nodes are settled from the next up on: registered as the create
	// did, with its gate (clusterCreate), which the state then holds.
	tcTimed(t, "up that settles", func() harness.Result { return p.Up(t, "--expect-no-changes") })
	for urn, gate := range applyGates(t, p) {
		if gate["clusterCreate"] != true {
			t.Errorf("%s is not settled after the up that recorded its gate: %v", urn, gate)
		}
	}
	preview := p.Preview(t, "--expect-no-changes", "-v=9", "--logtostderr")
	// Only the CLI's mustWrite records are printed: a -v=9 log prints inputs
	// and outputs (secrets_scan_test.go).
	writes := regexp.MustCompile(`[^\n]*mustWrite\(\) true[^\n]*`).FindAllString(preview.Output(), -1)
	if preview.ExitCode != 0 || len(writes) != 0 {
		t.Errorf("no-op preview after the gates were recorded: exit %d, %d state writes:\n%s",
			preview.ExitCode, len(writes), strings.Join(writes, "\n"))
	}
}

// applyGates are the healthGate inputs of the stack's ConfigurationApply
// resources, by URN.
func applyGates(t *testing.T, p *harness.Project) map[string]map[string]any {
	t.Helper()
	var state struct {
		Deployment struct {
			Resources []struct {
				URN    string         `json:"urn"`
				Type   string         `json:"type"`
				Inputs map[string]any `json:"inputs"`
			} `json:"resources"`
		} `json:"deployment"`
	}
	if err := json.Unmarshal([]byte(p.StackExport(t)), &state); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, r := range state.Deployment.Resources {
		if r.Type == "proxmoxtalos:talos:ConfigurationApply" {
			out[r.URN], _ = r.Inputs["healthGate"].(map[string]any)
		}
	}
	if len(out) == 0 {
		t.Fatal("the state holds no ConfigurationApply")
	}
	return out
}

// stripGateKeys rewrites the stack's state as a provider before keys left
// it: every ConfigurationApply's healthGate.vm, in its inputs and outputs,
// without them.
func stripGateKeys(t *testing.T, p *harness.Project, keys ...string) {
	t.Helper()
	var state map[string]any
	if err := json.Unmarshal([]byte(p.StackExport(t)), &state); err != nil {
		t.Fatal(err)
	}
	stripped := 0
	for _, r := range state["deployment"].(map[string]any)["resources"].([]any) {
		res := r.(map[string]any)
		if res["type"] != "proxmoxtalos:talos:ConfigurationApply" {
			continue
		}
		for _, side := range []string{"inputs", "outputs"} {
			gate, _ := res[side].(map[string]any)["healthGate"].(map[string]any)
			vm, ok := gate["vm"].(string)
			if !ok {
				t.Fatalf("%s: no healthGate.vm in its %s", res["urn"], side)
			}
			var kept []string
			for _, kv := range strings.Fields(vm) {
				k, _, _ := strings.Cut(kv, "=")
				if !slices.Contains(keys, k) {
					kept = append(kept, kv)
				}
			}
			gate["vm"] = strings.Join(kept, " ")
			stripped++
		}
	}
	if stripped == 0 {
		t.Fatal("the state holds no ConfigurationApply gate")
	}
	raw, err := json.Marshal(state)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	p.MustRun(t, "stack", "import", "--file", file)
}
