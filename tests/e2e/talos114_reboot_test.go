package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// talos114Program is a one-node Talos 1.14 cluster of the node resources;
// patch is a YAML flow string, mode the applyMode.
func talos114Program(cp, patch, mode string) string {
	return fmt.Sprintf(`variables:
  cpConfig:
    fn::invoke:
      function: proxmoxtalos:talos:getMachineConfiguration
      arguments:
        clusterName: lab114
        clusterEndpoint: https://%[1]s:6443
        machineType: controlplane
        machineSecrets: ${secrets.machineSecrets}
        talosVersion: v1.14.1
        installImage: factory.talos.dev/nocloud-installer/%[2]s:v1.14.1
        configPatches: [ %[3]q ]
      return: machineConfiguration
  talosconfig:
    fn::invoke:
      function: proxmoxtalos:talos:getClientConfiguration
      arguments:
        clusterName: lab114
        endpoints: [ %[1]s ]
        clientConfiguration: ${secrets.clientConfiguration}
      return: talosConfig
resources:
  secrets:
    type: proxmoxtalos:talos:MachineSecrets
    properties:
      talosVersion: v1.14.1
  cpApply:
    type: proxmoxtalos:talos:ConfigurationApply
    properties:
      node: %[1]s
      clientConfiguration: ${secrets.clientConfiguration}
      machineConfiguration: ${cpConfig}
      applyMode: %[4]s
      timeouts: { create: 2m, update: 2m }
  bootstrap:
    type: proxmoxtalos:talos:Bootstrap
    properties:
      node: %[1]s
      clientConfiguration: ${secrets.clientConfiguration}
    options:
      dependsOn:
        - ${cpApply}
outputs:
  talosconfig: ${talosconfig}
  mode: ${cpApply.appliedMode}
`, cp, simtest.Schematic, patch, mode)
}

// A Talos 1.14 cluster (one control plane, bootstrapped) through the real
// CLI, given a change that reboots a 1.12 node (machine.env). Talos 1.14
// applies it without a reboot and has no apply mode reboot (siderolabs/talos
// 995bc30d5). applyMode auto: the preview says it takes effect only at the
// next reboot, the update warns so, and the node keeps its boot (real
// talosctl reads the same boot ID). applyMode try: the same, but the
// change never takes effect (a try configuration is not saved), and the
// update says so. applyMode reboot: the update reboots the
// node, and its boot ID changes; with no VM under the simulated node and
// no apply mode reboot on 1.14, only the Reboot API can have done it.
func TestTalos114RebootChangeWithTheCLI(t *testing.T) {
	t.Parallel()

	cp := simtest.AddressBlock()(2)
	sim := simtest.Start(t)
	node := simtest.BootVersion(sim, "cp1", cp, "scsi0", "v1.14.1")

	env := harness.NewEnv(t)
	p := harness.NewYAMLProject(t, env, "talos114", talos114Program(cp.String(), basePatch, "auto"))
	mustSucceed(t, "create", p.Up(t))

	talosconfig := tcStackOutput(t, p, "talosconfig")
	bootID := func() string { return talosctlBootID(t, talosconfig, cp.String()) }

	first, boots := bootID(), node.Status().Boots

	// applyMode auto: applied without a reboot, effective at the next one.
	p.WriteProgram(t, "talos114", talos114Program(cp.String(), "machine: {nodeLabels: {lab: e2e}, env: {LAB_PROXY: 'http://proxy.lan:3128'}}", "auto"))

	pre := mustSucceed(t, "preview of machine.env (auto)", p.Preview(t, "--diff"))
	if want := "no reboot (Talos v1.14.1): machine.env effective only at the next reboot; applyMode reboot reboots now"; !strings.Contains(squeeze(pre), want) {
		t.Errorf("preview lacks %q:\n%s", want, pre)
	}

	up := mustSucceed(t, "up of machine.env (auto)", p.Up(t))
	if want := "runs Talos v1.14.1, which applied the configuration without a reboot: changes to machine.env take effect only at the node's next reboot"; !strings.Contains(squeeze(up), want) {
		t.Errorf("the update does not warn %q:\n%s", want, up)
	}

	if got := tcStackOutput(t, p, "mode"); got != "no-reboot" {
		t.Errorf("appliedMode after auto = %q, want no-reboot", got)
	}

	if id := bootID(); id != first || node.Status().Boots != boots {
		t.Errorf("the node rebooted for applyMode auto on Talos 1.14: boot ID %s → %s, boots %d → %d", first, id, boots, node.Status().Boots)
	}

	// applyMode try: accepted without a reboot and never saved, so the
	// change never takes effect; the update says so.
	p.WriteProgram(t, "talos114", talos114Program(cp.String(), "machine: {nodeLabels: {lab: e2e}, env: {LAB_PROXY: 'http://proxy3.lan:3128'}}", "try"))

	pre = mustSucceed(t, "preview of machine.env (try)", p.Preview(t, "--diff"))
	if want := "try (Talos v1.14.1): machine.env.LAB_PROXY never takes effect (reboot ends the try)"; !strings.Contains(squeeze(pre), want) {
		t.Errorf("preview lacks %q:\n%s", want, pre)
	}

	up = mustSucceed(t, "up of machine.env (try)", p.Up(t))
	if want := "which applied the configuration in try mode without a reboot: changes to machine.env.LAB_PROXY take effect only at a reboot"; !strings.Contains(squeeze(up), want) ||
		!strings.Contains(squeeze(up), "so they do not take effect") {
		t.Errorf("the update does not warn %q:\n%s", want, up)
	}

	if id := bootID(); id != first || node.Status().Boots != boots {
		t.Errorf("the node rebooted for applyMode try on Talos 1.14: boot ID %s → %s, boots %d → %d", first, id, boots, node.Status().Boots)
	}

	// applyMode reboot: applied, then rebooted through the Reboot API.
	p.WriteProgram(t, "talos114", talos114Program(cp.String(), "machine: {nodeLabels: {lab: e2e}, env: {LAB_PROXY: 'http://proxy2.lan:3128'}}", "reboot"))

	pre = mustSucceed(t, "preview of machine.env (reboot)", p.Preview(t, "--diff"))
	if want := "node " + cp.String() + ": reboot: machine.env.LAB_PROXY"; !strings.Contains(squeeze(pre), want) {
		t.Errorf("preview lacks %q:\n%s", want, pre)
	}

	mustSucceed(t, "up of machine.env (reboot)", p.Up(t))

	if got := tcStackOutput(t, p, "mode"); got != "reboot" {
		t.Errorf("appliedMode after reboot = %q, want reboot", got)
	}

	if id := bootID(); id == first || node.Status().Boots <= boots {
		t.Errorf("applyMode reboot on Talos 1.14 did not reboot the node: boot ID %s → %s, boots %d → %d", first, id, boots, node.Status().Boots)
	}

	mustSucceed(t, "preview after", p.Preview(t, "--expect-no-changes"))
}

// tcStackOutput is one stack output, secrets shown.
func tcStackOutput(t *testing.T, p *harness.Project, name string) string {
	t.Helper()

	return strings.TrimSpace(p.MustRun(t, "stack", "output", name, "--show-secrets").Stdout)
}

// talosctlBootID reads a node's boot ID with the real talosctl (make
// tools), as `talosctl reboot --wait` tells a reboot.
func talosctlBootID(t *testing.T, talosconfig, node string) string {
	t.Helper()

	bin := filepath.Join(harness.ToolsBin(t), "talosctl")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "talosconfig")

	if err := os.WriteFile(cfg, []byte(talosconfig), 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	cmd := exec.CommandContext(ctx, bin, "--talosconfig", cfg, "-n", node, "read", "/proc/sys/kernel/random/boot_id")
	cmd.Env = append(os.Environ(), "HOME="+dir, "NO_COLOR=1")

	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut

	if err := cmd.Run(); err != nil {
		t.Fatalf("talosctl read boot_id: %v\n%s%s", err, out.String(), errOut.String())
	}

	return strings.TrimSpace(out.String())
}
