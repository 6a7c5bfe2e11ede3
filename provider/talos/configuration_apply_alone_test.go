package talos

import (
	"testing"

	p "github.com/pulumi/pulumi-go-provider"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// An update leaves a node alone only when nothing of it would reach the
// node or wait for the cluster's health: each condition of Diff and Update
// (needsNode, the VM restart, a replacement) and of a refresh's Read.
func TestLeavesNodeAlone(t *testing.T) {
	t.Parallel()

	c := newSimCluster(t, simtest.AddressBlock()(1))
	cfg := c.config(talosconfig.RoleWorker, "/dev/sda", simtest.Version)
	other := c.config(talosconfig.RoleWorker, "/dev/sda", simtest.Version, "machine:\n  env:\n    A: b\n")
	digest, err := talosapi.ConfigDigest([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	image, _ := talosapi.ConfigInstallImage([]byte(cfg)) //nolint:errcheck // checked below
	if image == "" {
		t.Fatal("the configuration has no installer image")
	}

	args := func() ConfigurationApplyArgs {
		return ConfigurationApplyArgs{Node: "10.0.0.11", MachineConfiguration: cfg, MachineId: ptrTo("uuid-a"),
			HealthGate: &HealthGate{Vm: ptrTo("cores=2")}}
	}
	state := func() ConfigurationApplyState {
		return ConfigurationApplyState{ConfigurationApplyArgs: args(), ConfigDigest: digest,
			RunningVersion: simtest.Version, InstalledImage: image}
	}
	cases := []struct {
		name            string
		st              func(*ConfigurationApplyState)
		in              func(*ConfigurationApplyArgs)
		running, runVer string
		want            bool
	}{
		{"nothing", nil, nil, cfg, simtest.Version, true},
		{"endpoints only (the state alone)", nil, func(a *ConfigurationApplyArgs) { a.Endpoints = []string{"10.0.0.10"} }, cfg, simtest.Version, true},
		{"gate lists only", nil, func(a *ConfigurationApplyArgs) { a.HealthGate.Workers = []string{"10.0.0.14"} }, cfg, simtest.Version, true},
		{"unverified (the last operation did not finish)", func(s *ConfigurationApplyState) { s.ConfigDigest = "" }, nil, cfg, simtest.Version, false},
		{"stale installed image", func(s *ConfigurationApplyState) { s.InstalledImage = "factory.talos.dev/installer/x:v1.0.0" }, nil, cfg, simtest.Version, false},
		{"another configuration", nil, func(a *ConfigurationApplyArgs) { a.MachineConfiguration = other }, cfg, simtest.Version, false},
		{"another version in the state", func(s *ConfigurationApplyState) { s.RunningVersion = "v1.11.0" }, nil, cfg, simtest.Version, false},
		{"the node runs another configuration (a refresh reads it)", nil, nil, other, simtest.Version, false},
		{"the node runs another version (a refresh reads it)", nil, nil, cfg, "v1.11.0", false},
		{"the node does not answer", nil, nil, "", "", false},
		{"VM restarted", nil, func(a *ConfigurationApplyArgs) { a.HealthGate.Vm = ptrTo("cores=4") }, cfg, simtest.Version, false},
		{"VM settings in another order", func(s *ConfigurationApplyState) { s.HealthGate.Vm = ptrTo("diskStorage=a cores=2") },
			func(a *ConfigurationApplyArgs) { a.HealthGate.Vm = ptrTo("cores=2 diskStorage=a") }, cfg, simtest.Version, true},
		// Update's vmChangedByCheck would wait for health, as Check decides
		// from the old inputs, which the state does not show
		{"a VM setting the stored gate lacks", nil, func(a *ConfigurationApplyArgs) { a.HealthGate.Vm = ptrTo("cores=2 diskStorage=a") }, cfg, simtest.Version, false},
		{"another machine", nil, func(a *ConfigurationApplyArgs) { a.MachineId = ptrTo("uuid-b") }, cfg, simtest.Version, false},
		{"another address", nil, func(a *ConfigurationApplyArgs) { a.Node = "10.0.0.12" }, cfg, simtest.Version, false},
		{"staged", func(s *ConfigurationApplyState) { s.ApplyMode = ptrTo(ApplyMode("staged")) },
			func(a *ConfigurationApplyArgs) { a.ApplyMode = ptrTo(ApplyMode("staged")) }, cfg, simtest.Version, false},
	}
	for _, tc := range cases {
		st, in := state(), args()
		if tc.st != nil {
			tc.st(&st)
		}
		if tc.in != nil {
			tc.in(&in)
		}
		if got := LeavesNodeAlone(st, in, tc.running, tc.runVer); got != tc.want {
			t.Errorf("%s: leaves the node alone %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A stage has nothing to do only at its version and when its last create or
// update finished (an outcome): the engine reruns one that failed part-way
// whatever Diff says (init errors, which the stack's outputs do not show).
func TestStageUnchanged(t *testing.T) {
	t.Parallel()

	st := ControlPlaneComponentsState{ControlPlaneComponentsArgs: ControlPlaneComponentsArgs{KubernetesVersion: "v1.35.2"}, Outcome: componentsCurrent}
	if !StageUnchanged(st, "1.35.2") {
		t.Error("a stage at its version is not unchanged")
	}

	if StageUnchanged(st, "v1.35.3") {
		t.Error("a stage that moves is unchanged")
	}

	st.Outcome = ""
	if StageUnchanged(st, "v1.35.2") {
		t.Error("a stage whose last update failed part-way is unchanged")
	}
}

// A stage whose last operation changed the node but failed before it saw
// it healthy (outcome "") is updated again at the same version: a refresh
// drops the init error that would have made the engine run it (review
// s14c S2); a finished one is not.
func TestUnfinishedStageIsUpdatedAgain(t *testing.T) {
	in := ControlPlaneComponentsArgs{KubernetesVersion: "1.35.2"}
	unfinished := ControlPlaneComponentsState{ControlPlaneComponentsArgs: ControlPlaneComponentsArgs{KubernetesVersion: "v1.35.2"}}
	if d := diffControlPlaneComponents(unfinished, in); !d.HasChanges || d.DetailedDiff["outcome"].Kind != p.Update {
		t.Fatalf("unfinished stage at the same version: %+v, want an update of outcome", d)
	}
	done := unfinished
	done.Outcome = componentsCurrent
	if d := diffControlPlaneComponents(done, in); d.HasChanges {
		t.Fatalf("finished stage at the same version: %+v, want no change", d)
	}
	if d := diffControlPlaneComponents(unfinished, ControlPlaneComponentsArgs{}); d.HasChanges {
		t.Fatalf("unknown version: %+v, want no change", d)
	}
}
