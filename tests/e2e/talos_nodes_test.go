package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	simtalos "github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// The Talos node resources (ConfigurationApply, Bootstrap, Kubeconfig,
// ClusterHealth) driven by the real CLI in a YAML project, against simulated
// Talos nodes powered on directly (no Proxmox): install from maintenance
// mode, a preview that names the changed configuration paths and says per
// node whether it reboots, an in-place Talos upgrade, and a reset on destroy.

// basePatch is a patch every configuration carries (an empty patch is not a
// patch).
const basePatch = "machine: {nodeLabels: {lab: e2e}}"

// nodesProgram is the YAML program; cpPatch and workerPatch are YAML flow
// strings, workerVersion the worker's Talos version.
func nodesProgram(cp, worker, cpPatch, workerPatch, workerVersion string) string {
	return fmt.Sprintf(`variables:
  cpConfig:
    fn::invoke:
      function: proxmoxtalos:talos:getMachineConfiguration
      arguments:
        clusterName: lab
        clusterEndpoint: https://%[1]s:6443
        machineType: controlplane
        machineSecrets: ${secrets.machineSecrets}
        talosVersion: v1.12.5
        installImage: factory.talos.dev/nocloud-installer/%[3]s:v1.12.5
        configPatches: [ %[4]q ]
      return: machineConfiguration
  workerConfig:
    fn::invoke:
      function: proxmoxtalos:talos:getMachineConfiguration
      arguments:
        clusterName: lab
        clusterEndpoint: https://%[1]s:6443
        machineType: worker
        machineSecrets: ${secrets.machineSecrets}
        talosVersion: v1.12.5
        installDisk: /dev/vda
        installImage: factory.talos.dev/nocloud-installer/%[3]s:%[6]s
        configPatches: [ %[5]q ]
      return: machineConfiguration
resources:
  secrets:
    type: proxmoxtalos:talos:MachineSecrets
    properties:
      talosVersion: v1.12.5
  cpApply:
    type: proxmoxtalos:talos:ConfigurationApply
    properties:
      node: %[1]s
      clientConfiguration: ${secrets.clientConfiguration}
      machineConfiguration: ${cpConfig}
      timeouts: { create: 2m, update: 2m }
  bootstrap:
    type: proxmoxtalos:talos:Bootstrap
    properties:
      node: %[1]s
      clientConfiguration: ${secrets.clientConfiguration}
    options:
      dependsOn:
        - ${cpApply}
  workerApply:
    type: proxmoxtalos:talos:ConfigurationApply
    properties:
      node: %[2]s
      clientConfiguration: ${secrets.clientConfiguration}
      machineConfiguration: ${workerConfig}
      reset: { enabled: true }
      timeouts: { create: 2m, update: 2m, delete: 2m }
    options:
      dependsOn:
        - ${bootstrap}
  kubeconfig:
    type: proxmoxtalos:talos:Kubeconfig
    properties:
      node: %[1]s
      clientConfiguration: ${secrets.clientConfiguration}
    options:
      dependsOn:
        - ${bootstrap}
  health:
    type: proxmoxtalos:talos:ClusterHealth
    properties:
      controlPlanes: [ %[1]s ]
      workers: [ %[2]s ]
      clientConfiguration: ${secrets.clientConfiguration}
      kubeconfig: ${kubeconfig.kubeconfig}
      triggers:
        - ${cpApply.configDigest}
        - ${workerApply.configDigest}
        - ${workerApply.runningVersion}
outputs:
  kubeconfig: ${kubeconfig.kubeconfig}
  nodes: ${health.nodes}
  cpMode: ${cpApply.appliedMode}
  workerMode: ${workerApply.appliedMode}
  workerVersion: ${workerApply.runningVersion}
`, cp, worker, simtest.Schematic, cpPatch, workerPatch, workerVersion)
}

func mustSucceed(t *testing.T, what string, r harness.Result) string {
	t.Helper()

	if r.ExitCode != 0 {
		t.Fatalf("%s failed: %s", what, r)
	}

	return r.Output()
}

func TestTalosNodeResourcesWithTheCLI(t *testing.T) {
	t.Parallel()

	ip := simtest.AddressBlock()
	cp, worker := ip(2), ip(10)

	sim := simtest.Start(t)
	simtest.Boot(sim, "cp1", cp, "scsi0")
	simtest.Boot(sim, "w1", worker, "virtio0")

	// A credential in a proxy URL: it must never show.
	const secret = "hunter2-proxy-password"

	env := harness.NewEnv(t)
	p := harness.NewYAMLProject(t, env, "talosnodes", nodesProgram(cp.String(), worker.String(), basePatch, basePatch, "v1.12.5"))

	var all strings.Builder

	// Creating a node shows its inputs, not its whole configuration.
	first := mustSucceed(t, "first preview", p.Preview(t, "--diff"))
	all.WriteString(first)

	if strings.Contains(first, "configView") || !strings.Contains(first, "machineConfiguration: [secret]") {
		t.Errorf("create preview:\n%s", first)
	}

	all.WriteString(mustSucceed(t, "up", p.Up(t)))
	all.WriteString(mustSucceed(t, "second preview", p.Preview(t, "--expect-no-changes", "--diff")))
	all.WriteString(mustSucceed(t, "refresh", p.Refresh(t)))
	all.WriteString(mustSucceed(t, "preview after refresh", p.Preview(t, "--expect-no-changes", "--diff")))

	// A kubelet argument on the worker (live) and a proxy on the control
	// plane (machine.env: Talos reboots for it).
	p.WriteProgram(t, "talosnodes", nodesProgram(cp.String(), worker.String(),
		"machine: {nodeLabels: {lab: e2e}, env: {https_proxy: 'http://admin:"+secret+"@proxy.lan:3128'}}",
		"machine: {nodeLabels: {lab: e2e}, kubelet: {extraArgs: {rotate-server-certificates: 'true'}}}", "v1.12.5"))

	previewRun := p.Preview(t, "--diff")
	preview := mustSucceed(t, "preview of the change", previewRun)
	all.WriteString(preview)

	// In the diff itself (stdout, what a pull request comment shows): the
	// changed paths and, per node, how the change takes effect.
	for _, want := range []string{
		"+ machine.kubelet.extraArgs.rotate-server-certificates: \"true\"",
		"+ machine.env.https_proxy: \"(sensitive, hmac:",
		"+ configChange: \"live: 1 path, no reboot\"",
		"+ configChange: \"reboot: machine.env\"",
	} {
		if !strings.Contains(squeeze(previewRun.Stdout), squeeze(want)) {
			t.Errorf("preview diff lacks %q:\n%s", want, previewRun.Stdout)
		}
	}

	// And as diagnostics naming the node.
	for _, want := range []string{
		"node " + worker.String() + ": live: 1 path, no reboot",
		"node " + cp.String() + ": reboot: machine.env",
	} {
		if !strings.Contains(squeeze(preview), squeeze(want)) {
			t.Errorf("preview lacks %q:\n%s", want, preview)
		}
	}

	up := mustSucceed(t, "up with the change", p.Up(t))
	all.WriteString(up)

	outputs := mustSucceed(t, "stack output", p.Run(t, "stack", "output", "--json"))
	if !strings.Contains(outputs, `"cpMode": "reboot"`) || !strings.Contains(outputs, `"workerMode": "no-reboot"`) {
		t.Errorf("applied modes: %s", outputs)
	}

	// Talos upgrade of the worker through its installer image tag.
	p.WriteProgram(t, "talosnodes", nodesProgram(cp.String(), worker.String(),
		"machine: {nodeLabels: {lab: e2e}, env: {https_proxy: 'http://admin:"+secret+"@proxy.lan:3128'}}",
		"machine: {nodeLabels: {lab: e2e}, kubelet: {extraArgs: {rotate-server-certificates: 'true'}}}", "v1.12.6"))

	previewRun = p.Preview(t, "--diff")
	preview = mustSucceed(t, "preview of the upgrade", previewRun)
	all.WriteString(preview)

	// One line, this update's (not the previous one's on the left).
	if !strings.Contains(preview, "node "+worker.String()+": upgrade v1.12.5 → v1.12.6 (reboot, VM kept)") ||
		!strings.Contains(squeeze(previewRun.Stdout), squeeze(`+ configChange: "upgrade v1.12.5 → v1.12.6 (reboot, VM kept)"`)) {
		t.Errorf("preview does not announce the upgrade:\n%s", preview)
	}

	all.WriteString(mustSucceed(t, "up with the upgrade", p.Up(t)))

	outputs = mustSucceed(t, "stack output", p.Run(t, "stack", "output", "--json"))
	if !strings.Contains(outputs, `"workerVersion": "v1.12.6"`) {
		t.Errorf("worker version after the upgrade: %s", outputs)
	}

	all.WriteString(mustSucceed(t, "preview after the upgrade", p.Preview(t, "--expect-no-changes")))

	state := p.StackExport(t)

	// Every secret value of the applied configurations (keys, tokens, the
	// proxy credential), read from the decrypted state: none may appear in
	// the output or in the state outside its encrypted values (configView
	// is plain text by design, with fingerprints for secrets).
	secrets := []string{secret}
	for _, cfg := range appliedConfigs(t, p) {
		secrets = append(secrets, talosconfig.SensitiveValues(cfg)...)
	}

	if len(secrets) < 10 {
		t.Fatalf("only %d secret values found in the configurations", len(secrets))
	}

	all.WriteString(mustSucceed(t, "destroy", p.Destroy(t)))

	for name, text := range map[string]string{"CLI output": all.String(), "state": state} {
		for _, v := range secrets {
			if len(v) >= 8 && strings.Contains(text, v) {
				t.Errorf("%s contains a secret value of the machine configuration (%d characters)", name, len(v))
			}
		}
	}

	// The worker was reset on destroy (reset.enabled): it powers off.
	deadline := time.Now().Add(time.Minute) // a guard against hanging, not a speed check
	for n := sim.Node(worker); n != nil && n.Status().Phase != simtalos.PhaseOff; n = sim.Node(worker) {
		if time.Now().After(deadline) {
			t.Fatalf("worker still not off a minute after destroy with reset (a hang guard): %+v", n.Status())
		}

		time.Sleep(20 * time.Millisecond)
	}
}

// appliedConfigs returns the machine configurations of the ConfigurationApply
// resources, from the state exported with secrets shown.
func appliedConfigs(t *testing.T, p *harness.Project) []string {
	t.Helper()

	var export struct {
		Deployment struct {
			Resources []struct {
				Type    string         `json:"type"`
				Outputs map[string]any `json:"outputs"`
			} `json:"resources"`
		} `json:"deployment"`
	}

	out := p.MustRun(t, "stack", "export", "--show-secrets").Stdout
	if err := json.Unmarshal([]byte(out), &export); err != nil {
		t.Fatal(err)
	}

	var configs []string

	for _, r := range export.Deployment.Resources {
		if r.Type != "proxmoxtalos:talos:ConfigurationApply" {
			continue
		}

		v := r.Outputs["machineConfiguration"]
		if m, ok := v.(map[string]any); ok { // a secret: {"4dabf18193072939515e22adb298388d": ..., "plaintext": "\"...\""}
			var s string
			if err := json.Unmarshal([]byte(fmt.Sprint(m["plaintext"])), &s); err == nil {
				v = s
			}
		}

		if s, ok := v.(string); ok && s != "" {
			configs = append(configs, s)
		}
	}

	if len(configs) != 2 {
		t.Fatalf("found %d machine configurations in the state, want 2", len(configs))
	}

	return configs
}

// squeeze collapses runs of spaces (the CLI aligns map keys).
func squeeze(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
