package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	simtalos "github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// Issue 3's bad inputs with the real CLI in a YAML project against a
// simulated Talos node in maintenance mode: a broken patch, a Talos version
// machinery cannot generate for, an install disk the node does not have, and
// a node address that never answers. Each fails with a message that says what
// is wrong and where; none leaves a node changed without a resource in the
// state to resume from, and fixing the input converges.

type badInput struct {
	node, disk, version, patch string
}

func badInputProgram(in badInput) string {
	return fmt.Sprintf(`variables:
  config:
    fn::invoke:
      function: proxmoxtalos:talos:getMachineConfiguration
      arguments:
        clusterName: bad
        clusterEndpoint: https://%[1]s:6443
        machineType: controlplane
        machineSecrets: ${secrets.machineSecrets}
        talosVersion: %[3]s
        installDisk: %[2]s
        installImage: factory.talos.dev/nocloud-installer/%[5]s:v1.12.5
        configPatches: [ %[4]q ]
      return: machineConfiguration
resources:
  secrets:
    type: proxmoxtalos:talos:MachineSecrets
    properties:
      talosVersion: v1.12.5
  cp:
    type: proxmoxtalos:talos:ConfigurationApply
    properties:
      node: %[1]s
      clientConfiguration: ${secrets.clientConfiguration}
      machineConfiguration: ${config}
      timeouts: { create: 4s, update: 1m }
`, in.node, in.disk, in.version, in.patch, simtest.Schematic)
}

// stateResources lists the types and outputs of the stack's resources.
func stateResources(t *testing.T, p *harness.Project) map[string]map[string]any {
	t.Helper()

	var export struct {
		Deployment struct {
			Resources []struct {
				URN     string         `json:"urn"`
				Outputs map[string]any `json:"outputs"`
			} `json:"resources"`
		} `json:"deployment"`
	}

	if err := json.Unmarshal([]byte(p.StackExport(t)), &export); err != nil {
		t.Fatal(err)
	}

	out := map[string]map[string]any{}
	for _, r := range export.Deployment.Resources {
		out[r.URN[strings.LastIndex(r.URN, "::")+2:]] = r.Outputs
	}

	return out
}

func mustFail(t *testing.T, what string, r harness.Result, wants ...string) {
	t.Helper()

	if r.ExitCode == 0 {
		t.Fatalf("%s succeeded, want a failure", what)
	}

	for _, w := range wants {
		if !strings.Contains(squeeze(r.Output()), squeeze(w)) {
			t.Errorf("%s: the output lacks %q:\n%s", what, w, r.Output())
		}
	}
}

// timedOutAfter checks the output says the wait timed out after the
// configured create timeout: not before it (the wait starts a moment after
// the timeout's clock, so the reported time may fall short of it by a
// little: 3.9s of 4s), and not after the program's update timeout (1m) or
// the default (10m), which a wait that ignored it would report. The
// reported time is the provider's; a loaded machine only adds a little to it.
func timedOutAfter(t *testing.T, out string, timeout time.Duration) {
	t.Helper()

	m := regexp.MustCompile(`timed out after ([0-9][0-9.hms]*)`).FindStringSubmatch(out)
	if m == nil {
		t.Errorf("the output lacks \"timed out after ...\":\n%s", out)

		return
	}

	if d, err := time.ParseDuration(m[1]); err != nil || d < timeout*8/10 || d >= time.Minute {
		t.Errorf("timed out after %s, want the create timeout %s (not the update timeout 1m or the default)", m[1], timeout)
	}
}

func TestTalosBadInputsWithTheCLI(t *testing.T) {
	t.Parallel()

	ip := simtest.AddressBlock()
	node, nobody := ip(2), ip(99)

	sim := simtest.Start(t)
	simtest.Boot(sim, "cp1", node, "scsi0") // one disk: /dev/sda

	inMaintenance := func(what string) {
		t.Helper()

		if st := sim.Node(node).Status(); st.Configured || st.Phase != simtalos.PhaseMaintenance {
			t.Errorf("%s changed the node: %+v", what, st)
		}
	}

	good := badInput{node: node.String(), disk: "/dev/sda", version: "v1.12.5", patch: basePatch}

	env := harness.NewEnv(t)
	p := harness.NewYAMLProject(t, env, "talosbad", badInputProgram(good))

	// A patch Talos refuses (1.12 sets the hostname in a HostnameConfig
	// document). On a new stack the configuration cannot be generated in
	// preview (the secrets do not exist yet), so up fails at generation,
	// after creating the secrets and before any node is contacted; from then
	// on the preview fails too, with Talos's message and the patch number.
	bad := good
	bad.patch = "machine: {network: {hostname: cp1}}"
	p.WriteProgram(t, "talosbad", badInputProgram(bad))

	mustFail(t, "up with a broken patch", p.Up(t), "after patch 1 of 1", "static hostname is already set")
	mustFail(t, "preview with a broken patch", p.Preview(t), "after patch 1 of 1", "static hostname is already set")

	if res := stateResources(t, p); res["secrets"] == nil || res["cp"] != nil {
		t.Errorf("state after the broken patch: %v", slices.Sorted(maps.Keys(res)))
	}

	inMaintenance("a broken patch")

	// A Talos version newer than the provider knows.
	bad = good
	bad.version = "v1.15.0"
	p.WriteProgram(t, "talosbad", badInputProgram(bad))
	mustFail(t, "preview for Talos v1.15.0", p.Preview(t), "v1.15.0", "v1.8.0 to v1.14.x", "the newest is v1.14.1")

	// An install disk the node does not have: refused before anything is
	// sent, naming the disks the node has.
	bad = good
	bad.disk = "/dev/vdb"
	p.WriteProgram(t, "talosbad", badInputProgram(bad))
	mustSucceed(t, "preview with a missing disk (the node is not asked in preview)", p.Preview(t))
	mustFail(t, "up with a missing disk", p.Up(t), "no disk /dev/vdb", "/dev/sda")

	if res := stateResources(t, p); res["cp"] != nil {
		t.Errorf("a refused apply is in the state: %v", res["cp"])
	}

	inMaintenance("a missing install disk")

	// A node that never answers: a clear error once the create timeout
	// passes, not a hang, and nothing in the state.
	bad = good
	bad.node = nobody.String()
	p.WriteProgram(t, "talosbad", badInputProgram(bad))

	// The error says the wait ended at the create timeout (timedOutAfter),
	// which is the "not a hang" part: no clock of the test's own.
	r := p.Up(t)
	mustFail(t, "up against an address nobody answers", r, "timed out after", nobody.String()+":50000", "connection refused")
	timedOutAfter(t, r.Output(), 4*time.Second)

	if res := stateResources(t, p); res["cp"] != nil {
		t.Errorf("an apply that reached no node is in the state: %v", res["cp"])
	}

	// A by-id disk that does not exist passes the disk check (Talos resolves
	// it) and the node never comes up installed: the create fails after the
	// node took the configuration, and the state keeps the resource so that
	// the next up goes back to the node.
	bad = good
	bad.disk = "/dev/disk/by-id/does-not-exist"
	p.WriteProgram(t, "talosbad", badInputProgram(bad))
	r = p.Up(t)
	mustFail(t, "up with a by-id disk that does not exist", r, "waiting for node "+node.String()+" to run the applied configuration",
		"its install failed", "lstat /dev/disk/by-id/does-not-exist: no such file or directory")
	timedOutAfter(t, r.Output(), 4*time.Second)

	res := stateResources(t, p)
	if res["cp"] == nil || res["cp"]["appliedMode"] != "install" {
		t.Fatalf("the half-done install left no state to resume from: %v", res["cp"])
	}

	// Fixing the input converges from that state.
	p.WriteProgram(t, "talosbad", badInputProgram(good))
	mustSucceed(t, "up with the input fixed", p.Up(t))

	if st := sim.Node(node).Status(); !st.Configured || st.Phase != simtalos.PhaseRunning {
		t.Errorf("node after the fixed up: %+v", st)
	}

	mustSucceed(t, "preview after the fix", p.Preview(t, "--expect-no-changes"))
	mustSucceed(t, "destroy", p.Destroy(t))
}
