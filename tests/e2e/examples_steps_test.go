package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
)

// stepResult is what the Node.js, Python and Java runners write for a step.
type stepResult struct {
	Step            string                      `json:"step"`
	ResourceChanges map[string]int              `json:"resourceChanges"` // up, destroy
	ChangeSummary   map[string]int              `json:"changeSummary"`   // preview
	Outputs         map[string]auto.OutputValue `json:"outputs"`         // up
}

// stepFunc runs one step of a stack in some language.
type stepFunc func(t *testing.T, step string) stepResult

// stackSpec is the part of a runner's spec (tests/e2e/{node,python,java})
// that every language shares: the stack, the CLI's home, the provider, config.
func stackSpec(env *harness.Env, project, workDir string, config auto.ConfigMap) map[string]any {
	return map[string]any{
		"projectName": project,
		"stackName":   "test",
		"workDir":     workDir,
		"pulumiHome":  env.Home,
		"providerDir": env.ProviderDir,
		"envVars":     env.Vars(),
		"config":      configJSON(config),
	}
}

// runnerStep runs one step (up, preview, destroy) through a language's
// Automation API runner: spec, with the step and a result file added, goes to
// spec.json, runner runs on that file and writes the result. Any failure fails
// the test.
func runnerStep(t *testing.T, lang, project, step string, spec map[string]any, runner func(specFile string) (string, error)) stepResult {
	t.Helper()
	dir := t.TempDir()
	resultFile := filepath.Join(dir, "result.json")
	spec["step"], spec["resultFile"] = step, resultFile
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	specFile := filepath.Join(dir, "spec.json")
	if err := os.WriteFile(specFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runner(specFile)
	if err != nil {
		t.Fatalf("%s runner %s of %s: %v", lang, step, project, err)
	}
	t.Logf("%s runner %s:\n%s", lang, step, out)
	var res stepResult
	if b, err = os.ReadFile(resultFile); err != nil {
		t.Fatalf("%s runner %s wrote no result: %v", lang, step, err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("%s runner %s result: %v", lang, step, err)
	}
	return res
}

// labConfig is the provider configuration for a lab, as stack config.
func labConfig(l harness.Lab) auto.ConfigMap {
	return auto.ConfigMap{
		"proxmoxtalos:endpoint": {Value: l.Endpoint},
		"proxmoxtalos:apiToken": {Value: l.APIToken, Secret: true},
		"proxmoxtalos:caCert":   {Value: l.CACert},
	}
}

// configJSON is a ConfigMap in the runners' shape ({"value", "secret"}).
func configJSON(c auto.ConfigMap) map[string]map[string]any {
	out := map[string]map[string]any{}
	for k, v := range c {
		out[k] = map[string]any{"value": v.Value, "secret": v.Secret}
	}
	return out
}

// changes lists the non-"same" entries of a change summary, "" when there are none.
func changes(summary map[string]int) string {
	var out []string
	for op, n := range summary {
		if op != "same" && n > 0 {
			out = append(out, op+"="+strconv.Itoa(n))
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// checkSmoke runs the SDK smoke program (tests/e2e/node/smoke.ts, tests/e2e/python/smoke.py)
// through up, preview and destroy and checks what each step did in the lab.
func checkSmoke(t *testing.T, l *exampleLab, host string, step stepFunc) {
	t.Helper()
	up := step(t, "up")
	if up.ResourceChanges["create"] != 3 {
		t.Errorf("up created %v, want 3 (the stack, DownloadFile, MachineSecrets)", up.ResourceChanges)
	}
	for _, k := range []string{"machineSecrets", "talosconfig"} {
		if o, ok := up.Outputs[k]; !ok || !o.Secret {
			t.Errorf("output %s is missing or not secret (present: %v)", k, ok)
		}
	}
	if got, _ := up.Outputs["talosconfig"].Value.(string); !strings.Contains(got, "192.0.2.10") || !strings.Contains(got, "context: smoke") {
		t.Errorf("talosconfig output does not name the endpoint and context given")
	}
	// The ID of the schematic with only siderolabs/qemu-guest-agent (pitfalls.md).
	if got := up.Outputs["schematicId"].Value; got != "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515" {
		t.Errorf("schematicId = %v, want the qemu-guest-agent schematic's ID", got)
	}
	const volume = "local:iso/talos-v1.12.5-nocloud-amd64.iso"
	if got := up.Outputs["volumeId"].Value; got != volume {
		t.Errorf("volumeId = %v, want %s", got, volume)
	}
	if got := l.volumes(); len(got) != 1 || got[0] != host+"/"+volume {
		t.Errorf("lab volumes after up = %v, want only %s/%s", got, host, volume)
	}

	if changed := changes(step(t, "preview").ChangeSummary); changed != "" {
		t.Errorf("second preview reports changes: %s", changed)
	}

	if destroy := step(t, "destroy"); destroy.ResourceChanges["delete"] != 3 {
		t.Errorf("destroy deleted %v, want 3 (the stack and its 2 resources)", destroy.ResourceChanges)
	}
	l.requireEmpty(t)
}

// checkComponentExample runs a TalosCluster example (3 control planes and 1 worker on the
// lab) through up, preview and destroy and checks the cluster and the lab after each.
func checkComponentExample(t *testing.T, l *exampleLab, step stepFunc) {
	t.Helper()
	up := step(t, "up")
	checkClusterOutputs(t, l, up.Outputs, 4)
	if changed := changes(step(t, "preview").ChangeSummary); changed != "" {
		t.Errorf("second preview reports changes: %s", changed)
	}
	step(t, "destroy")
	l.requireEmpty(t)
}

// testWriter sends engine output to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
