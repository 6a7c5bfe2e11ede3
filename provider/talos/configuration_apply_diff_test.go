package talos

import (
	"context"
	"slices"
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// appliedState is the state after a successful apply of cfg.
func appliedState(t *testing.T, args ConfigurationApplyArgs, version string) ConfigurationApplyState {
	t.Helper()

	digest, err := talosapi.ConfigDigest([]byte(args.MachineConfiguration))
	if err != nil {
		t.Fatal(err)
	}

	view, err := talosconfig.Redact(args.MachineConfiguration)
	if err != nil {
		t.Fatal(err)
	}

	args.ConfigView = view.Map()

	return ConfigurationApplyState{ConfigurationApplyArgs: args, ConfigDigest: digest, RunningVersion: version, AppliedMode: "install"}
}

func withView(t *testing.T, args ConfigurationApplyArgs) ConfigurationApplyArgs {
	t.Helper()

	view, err := talosconfig.Redact(args.MachineConfiguration)
	if err != nil {
		t.Fatal(err)
	}

	args.ConfigView = view.Map()

	return args
}

func noteText(notes []diffNote) string {
	var b strings.Builder
	for _, n := range notes {
		b.WriteString(n.text + "\n")
	}

	return b.String()
}

func TestDiffNoChangeIsEmpty(t *testing.T) {
	t.Parallel()

	args := ConfigurationApplyArgs{Node: "10.5.0.2", MachineConfiguration: testConfig(t, "v1.12.5")}
	old := appliedState(t, args, "v1.12.5")

	d, notes := diffConfigurationApply(old, withView(t, args))
	if d.HasChanges || len(d.DetailedDiff) != 0 || len(notes) != 0 {
		t.Fatalf("unchanged inputs report %+v, %v", d, notes)
	}
}

func TestDiffKubeletArgIsLiveAndNamedByPath(t *testing.T) {
	t.Parallel()

	args := ConfigurationApplyArgs{Node: "10.5.0.2", MachineConfiguration: testConfig(t, "v1.12.5")}
	old := appliedState(t, args, "v1.12.5")

	next := args
	next.MachineConfiguration = testConfig(t, "v1.12.5", "machine:\n  kubelet:\n    extraArgs:\n      rotate-server-certificates: \"true\"\n")

	d, notes := diffConfigurationApply(old, withView(t, next))
	if !d.HasChanges {
		t.Fatal("no change reported")
	}

	want := `configView["machine.kubelet.extraArgs.rotate-server-certificates"]`
	// Old values are read from the state's outputs, where create stored the view.
	if pd, ok := d.DetailedDiff[want]; !ok || pd.Kind != p.Add || pd.InputDiff {
		t.Fatalf("detailed diff %v lacks %s as an add against the outputs", d.DetailedDiff, want)
	}

	if len(d.DetailedDiff) != 1 {
		t.Fatalf("detailed diff names more than the changed path: %v", d.DetailedDiff)
	}

	if txt := noteText(notes); txt != "node 10.5.0.2: live: 1 path, no reboot\n" {
		t.Fatalf("notes = %q", txt)
	}
}

func TestDiffEnvNeedsRebootAndNoRebootModeWarns(t *testing.T) {
	t.Parallel()

	args := ConfigurationApplyArgs{Node: "10.5.0.2", MachineConfiguration: testConfig(t, "v1.12.5")}
	old := appliedState(t, args, "v1.12.5")

	// machine.env is not among the fields Talos applies live
	// (Runtime.CanApplyImmediate), so AUTO reboots.
	next := args
	next.MachineConfiguration = testConfig(t, "v1.12.5", "machine:\n  env:\n    https_proxy: http://proxy.lan:3128\n")

	d, notes := diffConfigurationApply(old, withView(t, next))
	if !d.HasChanges {
		t.Fatal("no change reported")
	}

	if txt := noteText(notes); txt != "node 10.5.0.2: reboot: machine.env\n" {
		t.Fatalf("notes = %q", txt)
	}

	noReboot := ApplyMode("no-reboot")
	next.ApplyMode = &noReboot

	_, notes = diffConfigurationApply(old, withView(t, next))
	if len(notes) != 1 || !notes[0].warning || notes[0].text != "node 10.5.0.2: fails: machine.env needs a reboot, applyMode is no-reboot (use auto or reboot)" {
		t.Fatalf("notes = %+v", notes)
	}
}

// Talos 1.14 applies AUTO and NO_REBOOT without a reboot and without a
// reboot check (siderolabs/talos 995bc30d5; v1.14.0-rc.1 v1alpha1_server.go
// ApplyConfiguration): the machine.env change that reboots a 1.12 node (and
// that no-reboot refuses there) takes effect only at a 1.14 node's next
// reboot, and the preview says so, per node, as a warning.
func TestDiffEnvOnTalos114TakesEffectAtTheNextReboot(t *testing.T) {
	t.Parallel()

	noReboot := ApplyMode("no-reboot")

	for _, c := range []struct {
		version string
		mode    *ApplyMode
		want    string
		warning bool
	}{
		{"v1.12.5", nil, "node 10.5.0.2: reboot: machine.env", false},
		{"v1.12.5", &noReboot, "node 10.5.0.2: fails: machine.env needs a reboot, applyMode is no-reboot (use auto or reboot)", true},
		{"v1.14.1", nil, "node 10.5.0.2: no reboot (Talos v1.14.1): machine.env effective only at the next reboot; applyMode reboot reboots now", true},
		{"v1.14.1", &noReboot, "node 10.5.0.2: no reboot (Talos v1.14.1): machine.env effective only at the next reboot; applyMode reboot reboots now", true},
	} {
		args := ConfigurationApplyArgs{Node: "10.5.0.2", MachineConfiguration: testConfig(t, c.version), ApplyMode: c.mode}
		old := appliedState(t, args, c.version)

		next := args
		next.MachineConfiguration = testConfig(t, c.version, "machine:\n  env:\n    https_proxy: http://proxy.lan:3128\n")

		_, notes := diffConfigurationApply(old, withView(t, next))
		if len(notes) != 1 || notes[0].text != c.want || notes[0].warning != c.warning {
			t.Errorf("Talos %s, applyMode %v: notes = %+v, want %q (warning %v)", c.version, deref((*string)(c.mode)), notes, c.want, c.warning)
		}
	}
}

func TestDiffSecretChangeShowsFingerprintNotValue(t *testing.T) {
	t.Parallel()

	args := ConfigurationApplyArgs{Node: "10.5.0.2", MachineConfiguration: testConfig(t, "v1.12.5")}
	old := appliedState(t, args, "v1.12.5")

	next := args
	next.MachineConfiguration = testConfig(t, "v1.12.5", "machine:\n  token: abcdef.0123456789abcdef\n")
	next = withView(t, next)

	d, _ := diffConfigurationApply(old, next)

	key := `configView["machine.token"]`
	if _, ok := d.DetailedDiff[key]; !ok {
		t.Fatalf("detailed diff %v lacks %s", d.DetailedDiff, key)
	}

	if v := next.ConfigView["machine.token"]; strings.Contains(v, "abcdef") || !strings.HasPrefix(v, "(sensitive") {
		t.Fatalf("configView shows the token: %q", v)
	}
}

func TestDiffVersionBumpIsAnUpgrade(t *testing.T) {
	t.Parallel()

	args := ConfigurationApplyArgs{Node: "10.5.0.2", MachineConfiguration: testConfig(t, "v1.12.4")}
	old := appliedState(t, args, "v1.12.4")

	next := args
	next.MachineConfiguration = testConfig(t, "v1.12.5")

	d, notes := diffConfigurationApply(old, withView(t, next))
	if _, ok := d.DetailedDiff[`configView["machine.install.image"]`]; !ok {
		t.Fatalf("detailed diff %v lacks the install image path", d.DetailedDiff)
	}

	// The installer image path is the upgrade itself, not a change of its own.
	if txt := noteText(notes); txt != "node 10.5.0.2: upgrade v1.12.4 → v1.12.5 (reboot, VM kept)\n" {
		t.Fatalf("notes = %q", txt)
	}
}

func TestDiffNodeReplacesAndOptionsUpdate(t *testing.T) {
	t.Parallel()

	args := ConfigurationApplyArgs{Node: "10.5.0.2", MachineConfiguration: testConfig(t, "v1.12.5")}
	old := appliedState(t, args, "v1.12.5")

	next := withView(t, args)
	next.Node = "10.5.0.3"
	staged := ApplyMode("staged")
	next.ApplyMode = &staged
	yes := true
	next.Reset = &ResetOnDelete{Enabled: &yes}

	d, _ := diffConfigurationApply(old, next)
	if d.DetailedDiff["node"].Kind != p.UpdateReplace || d.DetailedDiff["applyMode"].Kind != p.Update || d.DetailedDiff["reset"].Kind != p.Update {
		t.Fatalf("detailed diff = %v", d.DetailedDiff)
	}

	if _, ok := d.DetailedDiff["machineConfiguration"]; ok {
		t.Fatal("unchanged configuration reported")
	}
}

func TestDiffUnknownConfiguration(t *testing.T) {
	t.Parallel()

	args := ConfigurationApplyArgs{Node: "10.5.0.2", MachineConfiguration: testConfig(t, "v1.12.5")}
	old := appliedState(t, args, "v1.12.5")

	next := args
	next.MachineConfiguration = "" // unknown in preview

	d, _ := diffConfigurationApply(old, next)
	if d.DetailedDiff["machineConfiguration"].Kind != p.Update {
		t.Fatalf("detailed diff = %v", d.DetailedDiff)
	}
}

func TestDiffEndpointOrderIsNotAChange(t *testing.T) {
	t.Parallel()

	args := ConfigurationApplyArgs{Node: "10.5.0.5", Endpoints: []string{"10.5.0.2", "10.5.0.3"}, MachineConfiguration: testConfig(t, "v1.12.5")}
	old := appliedState(t, args, "v1.12.5")

	next := withView(t, args)
	next.Endpoints = []string{"10.5.0.3", "10.5.0.2"}

	if d, _ := diffConfigurationApply(old, next); d.HasChanges {
		t.Fatalf("endpoint order reported: %v", d.DetailedDiff)
	}
}

func TestCheckDerivesViewAndRejectsBadInput(t *testing.T) {
	t.Parallel()

	cfg := testConfig(t, "v1.12.5")
	ca := &ConfigurationApply{}
	inputs := property.NewMap(map[string]property.Value{
		"node":                 property.New("10.5.0.2"),
		"machineConfiguration": property.New(cfg).WithSecret(true),
		"clientConfiguration": property.New(map[string]property.Value{
			"caCertificate": property.New("x"), "clientCertificate": property.New("y"), "clientKey": property.New("z"),
		}),
	})

	// Create: no view (the preview would print the whole configuration).
	resp, err := ca.Check(context.Background(), infer.CheckRequest{NewInputs: inputs})
	if err != nil || len(resp.Failures) != 0 || resp.Inputs.ConfigView != nil {
		t.Fatalf("check on create: %v %v, view of %d paths", err, resp.Failures, len(resp.Inputs.ConfigView))
	}

	// Update of the configuration: the view is derived.
	olds := inputs.Set("machineConfiguration", property.New(cfg+"\n# the text before\n").WithSecret(true))
	resp, err = ca.Check(context.Background(), infer.CheckRequest{OldInputs: olds, NewInputs: inputs})
	if err != nil || len(resp.Failures) != 0 {
		t.Fatalf("check: %v %v", err, resp.Failures)
	}

	if resp.Inputs.ConfigView["machine.type"] != "controlplane" || !strings.HasPrefix(resp.Inputs.ConfigView["machine.token"], "(sensitive") {
		t.Fatalf("configView not derived: type=%q token=%q", resp.Inputs.ConfigView["machine.type"], resp.Inputs.ConfigView["machine.token"])
	}

	// The same configuration as accepted last time: neither validated
	// again (a text a newer provider would refuse passes) nor viewed.
	bad := inputs.Set("machineConfiguration", property.New("version: v1alpha1\nmachine: {type: nonsense}\n").WithSecret(true))
	resp, err = ca.Check(context.Background(), infer.CheckRequest{OldInputs: bad, NewInputs: bad})
	if err != nil || len(resp.Failures) != 0 || resp.Inputs.ConfigView != nil {
		t.Fatalf("check of an unchanged configuration: %v %v, view of %d paths; want no failure and no view",
			err, resp.Failures, len(resp.Inputs.ConfigView))
	}
	resp, err = ca.Check(context.Background(), infer.CheckRequest{OldInputs: inputs, NewInputs: bad})
	if err != nil || len(resp.Failures) == 0 {
		t.Fatalf("check of a changed configuration Talos refuses: %v %v, want a failure", err, resp.Failures)
	}

	resp, err = ca.Check(context.Background(), infer.CheckRequest{NewInputs: property.NewMap(map[string]property.Value{
		"node":                 property.New("10.5.0.0/24"),
		"applyMode":            property.New("sometimes"),
		"talosVersion":         property.New("one.two"),
		"timeouts":             property.New(map[string]property.Value{"create": property.New("soon")}),
		"machineConfiguration": property.New("version: v1alpha1\nmachine: {type: nonsense}\n"),
		"clientConfiguration": property.New(map[string]property.Value{
			"caCertificate": property.New("x"), "clientCertificate": property.New("y"), "clientKey": property.New("z"),
		}),
	})})
	if err != nil {
		t.Fatal(err)
	}

	got := map[string]bool{}
	for _, f := range resp.Failures {
		got[f.Property] = true
	}

	for _, want := range []string{"node", "applyMode", "talosVersion", "timeouts.create", "machineConfiguration"} {
		if !got[want] {
			t.Errorf("no failure for %s: %+v", want, resp.Failures)
		}
	}
}

func TestDeriveConfigChange(t *testing.T) {
	t.Parallel()

	cfg := testConfig(t, "v1.12.4")
	old := property.NewMap(map[string]property.Value{
		"machineConfiguration": property.New(cfg),
		"configChange":         property.New("live: 1 path, no reboot"),
		"healthGate":           property.New(map[string]property.Value{"vm": property.New("cores=2 memory=4096MiB")}),
	})
	vm := func(s string) *HealthGate { return &HealthGate{ControlPlanes: []string{"10.5.0.2"}, Vm: &s} }

	// Nothing changes on the node: no line (the previous one is not kept).
	if got := deriveConfigChange(old, ConfigurationApplyArgs{MachineConfiguration: cfg, HealthGate: vm("cores=2 memory=4096MiB")}); got != nil {
		t.Fatalf("unchanged: %q", *got)
	}

	next := testConfig(t, "v1.12.5", "machine:\n  env:\n    https_proxy: http://proxy.lan:3128\n")

	got := deriveConfigChange(old, ConfigurationApplyArgs{MachineConfiguration: next, HealthGate: vm("cores=2 memory=4096MiB")})
	if want := "upgrade v1.12.4 → v1.12.5 (reboot, VM kept); then reboot: machine.env"; got == nil || *got != want {
		t.Fatalf("upgrade and env: %v, want %q", got, want)
	}

	got = deriveConfigChange(old, ConfigurationApplyArgs{MachineConfiguration: cfg, HealthGate: vm("cores=4 memory=4096MiB")})
	if want := "reboot: VM restart (cores 2 → 4)"; got == nil || *got != want {
		t.Fatalf("VM restart: %v, want %q", got, want)
	}

	// A key the last gate did not have (a provider upgrade added it) is no
	// change.
	if got := deriveConfigChange(old, ConfigurationApplyArgs{MachineConfiguration: cfg, HealthGate: vm("cores=2 memory=4096MiB diskStorage=fast")}); got != nil {
		t.Fatalf("key added: %q", *got)
	}
}

// Each line is short enough for the CLI (it cuts values at about 150
// characters) and says what happens to the node.
func TestChangeLine(t *testing.T) {
	t.Parallel()

	base := testConfig(t, "v1.12.5")
	many := testConfig(t, "v1.12.5", "machine:\n  env:\n    a: b\n  udev:\n    rules: [\"SUBSYSTEM==\\\"drm\\\", GROUP=\\\"44\\\"\"]\n  features:\n    rbac: false\n  sysctls:\n    vm.swappiness: \"10\"\n")
	env := testConfig(t, "v1.12.5", "machine:\n  env:\n    a: b\n")
	envLive := testConfig(t, "v1.12.5", "machine:\n  env:\n    a: b\n  sysctls:\n    vm.swappiness: \"10\"\n  nodeLabels:\n    tier: db\n")
	mirror := testConfig(t, "v1.12.5", "machine:\n  registries:\n    mirrors:\n      docker.io:\n        endpoints: [https://m.example.com]\n")

	for _, c := range []struct {
		name    string
		change  nodeChange
		want    string
		warning bool
	}{
		{"live", nodeChange{oldCfg: base, newCfg: mirror, mode: talosapi.ApplyAuto}, "live: 1 path, no reboot", false},
		{"staged", nodeChange{oldCfg: base, newCfg: mirror, mode: talosapi.ApplyStaged}, "staged: 1 path, applied at the next reboot", false},
		{"forced reboot", nodeChange{oldCfg: base, newCfg: mirror, mode: talosapi.ApplyReboot}, "reboot (applyMode reboot): 1 path", false},
		{"reboot paths cut", nodeChange{oldCfg: base, newCfg: many, mode: talosapi.ApplyAuto}, "reboot: machine.env, machine.features.rbac +1 more (4 paths in all)", false},
		{"try refused", nodeChange{oldCfg: base, newCfg: many, mode: talosapi.ApplyTry, fromVersion: "v1.12.5"},
			"fails: machine.env, machine.features.rbac +1 more need a reboot, applyMode is try (use auto or reboot)", true},
		{"try refused, one path", nodeChange{oldCfg: base, newCfg: env, mode: talosapi.ApplyTry, fromVersion: "v1.12.5"},
			"fails: machine.env needs a reboot, applyMode is try (use auto or reboot)", true},
		{"pending on 1.14", nodeChange{oldCfg: base, newCfg: many, mode: talosapi.ApplyAuto, fromVersion: "v1.14.1"},
			"no reboot (Talos v1.14.1): machine.env, machine.features.rbac +1 more effective only at the next reboot; applyMode reboot reboots now", true},
		{"try on 1.14", nodeChange{oldCfg: base, newCfg: many, mode: talosapi.ApplyTry, fromVersion: "v1.14.1"},
			"try (Talos v1.14.1): machine.env, machine.features.rbac +1 more never take effect (reboot ends the try); 1 other path live until tryTimeout", true},
		{"try on 1.14, one path", nodeChange{oldCfg: base, newCfg: env, mode: talosapi.ApplyTry, fromVersion: "v1.14.1"},
			"try (Talos v1.14.1): machine.env never takes effect (reboot ends the try)", true},
		{"try on 1.14, two live", nodeChange{oldCfg: base, newCfg: envLive, mode: talosapi.ApplyTry, fromVersion: "v1.14.1"},
			"try (Talos v1.14.1): machine.env never takes effect (reboot ends the try); 2 other paths live until tryTimeout", true},
		{"reboot mode on 1.14", nodeChange{oldCfg: base, newCfg: mirror, mode: talosapi.ApplyReboot, fromVersion: "v1.14.1"}, "reboot (applyMode reboot): 1 path", false},
		{"vm and upgrade", nodeChange{vmFrom: "cores=2 memory=4096MiB cloudInit=0123456789abcdef", vmTo: "cores=2 memory=8192MiB cloudInit=fedcba9876543210",
			fromVersion: "v1.12.4", toVersion: "v1.12.5"}, "reboot: VM restart (memory 4096MiB → 8192MiB, cloudInit changes); then upgrade v1.12.4 → v1.12.5 (reboot, VM kept)", false},
		// a disk move is live: no restart claimed
		{"disk move", nodeChange{vmFrom: "cores=2 diskStorage=local-lvm", vmTo: "cores=2 diskStorage=fast"},
			"VM disks moved live, no reboot (diskStorage local-lvm → fast); health checked after", false},
		{"disk move and restart", nodeChange{vmFrom: "cores=2 diskStorage=local-lvm", vmTo: "cores=4 diskStorage=fast"},
			"reboot: VM restart (cores 2 → 4, diskStorage local-lvm → fast)", false},
		// data disks (review s14b M1, C3): added or removed on sata at a
		// restart, on scsi live; moved or grown live on any bus
		{"sata disk added", nodeChange{vmFrom: "cores=2 dataDisks=", vmTo: "cores=2 dataDisks=sata1:8:local-lvm"},
			"reboot: VM restart (dataDisks - → sata1:8:local-lvm)", false},
		{"sata disk removed", nodeChange{vmFrom: "dataDisks=sata1:8:a,sata2:4:a", vmTo: "dataDisks=sata1:8:a"},
			"reboot: VM restart (dataDisks sata1:8:a,sata2:4:a → sata1:8:a)", false},
		{"sata disk moved", nodeChange{vmFrom: "dataDisks=sata1:8:local-lvm", vmTo: "dataDisks=sata1:8:fast"},
			"VM disks moved live, no reboot (dataDisks sata1:8:local-lvm → sata1:8:fast); health checked after", false},
		{"sata disk grown", nodeChange{vmFrom: "dataDisks=sata1:8:a", vmTo: "dataDisks=sata1:16:a"},
			"VM disks changed live, no reboot (dataDisks sata1:8:a → sata1:16:a); health checked after", false},
		{"scsi disk added", nodeChange{vmFrom: "diskStorage=a dataDisks=", vmTo: "diskStorage=a dataDisks=scsi1:8:a"},
			"VM disks changed live, no reboot (dataDisks - → scsi1:8:a); health checked after", false},
		// the OS disk grows live (qemu-server resize)
		{"os disk grown", nodeChange{vmFrom: "cores=2 diskSize=20GiB diskStorage=a", vmTo: "cores=2 diskSize=30GiB diskStorage=a"},
			"VM disks grown live, no reboot (diskSize 20GiB → 30GiB); health checked after", false},
		{"os disk grown and moved", nodeChange{vmFrom: "diskSize=20GiB diskStorage=a", vmTo: "diskSize=30GiB diskStorage=b"},
			"VM disks changed live, no reboot (diskSize 20GiB → 30GiB, diskStorage a → b); health checked after", false},
		{"os disk grown and restart", nodeChange{vmFrom: "memory=4096MiB diskSize=20GiB", vmTo: "memory=8192MiB diskSize=30GiB"},
			"reboot: VM restart (memory 4096MiB → 8192MiB, diskSize 20GiB → 30GiB)", false},
		// a key the old gate lacks is not named
		{"restart, key added", nodeChange{vmFrom: "cores=2", vmTo: "cores=4 diskStorage=fast"}, "reboot: VM restart (cores 2 → 4)", false},
	} {
		got, warning := changeLine(c.change)
		if got != c.want || warning != c.warning {
			t.Errorf("%s: %q (warning %v), want %q", c.name, got, warning, c.want)
		}

		if len(got) > 140 {
			t.Errorf("%s: %d characters, the CLI cuts it", c.name, len(got))
		}
	}

	// The configuration is applied after the upgrade, by the new version.
	up := nodeChange{oldCfg: base, newCfg: many, mode: talosapi.ApplyAuto, fromVersion: "v1.13.2", toVersion: "v1.14.1"}
	if got, warning := changeLine(up); !strings.HasSuffix(got, "; then no reboot (Talos v1.14.1): machine.env, machine.features.rbac +1 more effective only at the next reboot; applyMode reboot reboots now") || !warning {
		t.Errorf("upgrade to 1.14: %q (warning %v)", got, warning)
	}
}

// A change of the health gate alone is no update (the gate is read by the
// next update that touches the node); a change of its VM settings is: the
// VM restarted, and the cluster is checked again.
func TestDiffHealthGate(t *testing.T) {
	t.Parallel()

	gate := func(vm string, others ...string) *HealthGate {
		return &HealthGate{ControlPlanes: []string{"10.5.0.2"}, OtherNodes: others, Vm: &vm}
	}

	args := ConfigurationApplyArgs{Node: "10.5.0.2", MachineConfiguration: testConfig(t, "v1.12.5"), HealthGate: gate("cores=2")}
	old := appliedState(t, args, "v1.12.5")

	next := withView(t, args)
	next.HealthGate = gate("cores=2", "10.5.0.9")

	if d, notes := diffConfigurationApply(old, next); d.HasChanges || len(notes) > 0 {
		t.Fatalf("another tolerated node reported: %v %v", d.DetailedDiff, notes)
	}

	next.HealthGate = gate("cores=4")
	line := "reboot: VM restart (cores 2 → 4)"
	next.ConfigChange = &line

	d, notes := diffConfigurationApply(old, next)
	if pd, ok := d.DetailedDiff["configChange"]; !d.HasChanges || !ok || pd.Kind != p.Add || len(d.DetailedDiff) != 1 {
		t.Fatalf("VM restart: %v", d.DetailedDiff)
	}

	if txt := noteText(notes); txt != "node 10.5.0.2: "+line+"\n" {
		t.Fatalf("notes = %q", txt)
	}

	// Compared as key=value sets: a key the stored gate lacks (stored
	// before the key was added) is no VM change, whatever its value, only
	// a gate to record (TestDiffGateKeysAddedUpdateOnlyTheState).
	next.HealthGate, next.ConfigChange = gate("cores=2 diskStorage=local-lvm"), nil
	if d, _ := diffConfigurationApply(old, next); !d.HasChanges || len(d.DetailedDiff) != 1 || d.DetailedDiff["healthGate.vm"].Kind != p.Update {
		t.Fatalf("key added: %v", d.DetailedDiff)
	}

	// ...but Check saw a change against the last inputs, which have it (a
	// `pulumi up` without changes keeps the state's outputs): a VM change.
	moved := "VM disks moved live, no reboot (diskStorage local-lvm → fast); health checked after"
	next.HealthGate, next.ConfigChange = gate("cores=2 diskStorage=fast"), &moved

	d, notes = diffConfigurationApply(old, next)
	if pd, ok := d.DetailedDiff["configChange"]; !d.HasChanges || !ok || pd.Kind != p.Add || noteText(notes) != "node 10.5.0.2: "+moved+"\n" {
		t.Fatalf("disk move seen by Check: %v %q", d.DetailedDiff, noteText(notes))
	}

	// Both sides have the key: a value that differs is a change, and so is
	// a key left out.
	moving := appliedState(t, ConfigurationApplyArgs{Node: "10.5.0.2", MachineConfiguration: testConfig(t, "v1.12.5"), HealthGate: gate("cores=2 diskStorage=local-lvm")}, "v1.12.5")
	for _, vm := range []string{"cores=2 diskStorage=fast", "cores=2"} {
		next.HealthGate, next.ConfigChange = gate(vm), nil
		if d, _ := diffConfigurationApply(moving, next); !d.HasChanges || d.DetailedDiff["healthGate.vm"].Kind != p.Update {
			t.Errorf("%q after %q: %v", vm, "cores=2 diskStorage=local-lvm", d.DetailedDiff)
		}
	}
}

func TestGateRequest(t *testing.T) {
	t.Parallel()

	ep := "https://10.5.0.5:6443"
	g := &HealthGate{ControlPlanes: []string{"10.5.0.2", "10.5.0.3"}, Workers: []string{"10.5.0.7"}, OtherNodes: []string{"10.5.0.8"}, KubernetesEndpoint: &ep}

	before := gateRequest(g, "10.5.0.3:50000", gateBefore)
	if before == nil || !slices.Equal(before.ControlPlanes, []string{"10.5.0.2"}) || !slices.Equal(before.Others, []string{"10.5.0.8", "10.5.0.3:50000"}) ||
		!slices.Equal(before.KubeconfigFrom, []string{"10.5.0.2"}) || before.KubernetesServer != ep {
		t.Errorf("before: %+v", before)
	}

	after := gateRequest(g, "10.5.0.3", gateAfter)
	if after == nil || len(after.ControlPlanes) != 2 || len(after.Workers) != 1 || !slices.Equal(after.Others, []string{"10.5.0.8"}) {
		t.Errorf("after: %+v", after)
	}

	// Before the first control plane nothing is required.
	if r := gateRequest(&HealthGate{ControlPlanes: []string{"10.5.0.2"}}, "10.5.0.2", gateBefore); r != nil {
		t.Errorf("before the first control plane: %+v", r)
	}

	if gateRequest(nil, "10.5.0.2", gateAfter) != nil {
		t.Error("no gate, yet a check")
	}

	bad := "soon"
	if f := checkHealthGate(&HealthGate{Workers: []string{"10.5.0.0/24"}, Timeout: &bad}); len(f) != 3 {
		t.Errorf("failures %+v, want controlPlanes, workers[0] and timeout", f)
	}
}

// Issue 15: a value of the configuration that becomes secret (the same
// patch, now a Pulumi secret) is an update of sensitiveValues only: the
// node is not touched, and the stored view, which showed the value, is
// redacted. The diff names no configView path (its old value would print).
func TestDiffValueMadeSecretRedactsTheView(t *testing.T) {
	t.Parallel()

	const value = "rack-42-secret-label"
	args := ConfigurationApplyArgs{Node: "10.5.0.2", MachineConfiguration: testConfig(t, "v1.12.5", "machine:\n  nodeLabels:\n    note: "+value+"\n")}
	old := appliedState(t, args, "v1.12.5")
	if !strings.Contains(old.ConfigView["machine.nodeLabels.note"], value) {
		t.Fatalf("the plain view does not show the label: %v", old.ConfigView["machine.nodeLabels.note"])
	}

	next := args
	next.SensitiveValues = []string{value}
	next.ConfigView = configView(next.MachineConfiguration, next.SensitiveValues)

	d, notes := diffConfigurationApply(old, next)
	if _, ok := d.DetailedDiff["sensitiveValues"]; !ok || !d.HasChanges {
		t.Fatalf("diff %+v: want an update of sensitiveValues", d)
	}
	for k := range d.DetailedDiff {
		if strings.HasPrefix(k, "configView") || k == "machineConfiguration" || k == "configChange" {
			t.Errorf("diff names %s", k)
		}
	}
	if !strings.Contains(noteText(notes), "nothing changes on the node") {
		t.Errorf("notes %q", noteText(notes))
	}
	if needsNode(old, next) {
		t.Errorf("the update would touch the node")
	}
	if v := next.ConfigView["machine.nodeLabels.note"]; strings.Contains(v, value) {
		t.Errorf("the new view still shows the value: %q", v)
	}

	// The same secret values in another order: no change.
	again := appliedState(t, next, "v1.12.5")
	again.ConfigView = next.ConfigView
	next.SensitiveValues = []string{value, value}
	if d, _ := diffConfigurationApply(again, next); d.HasChanges {
		t.Errorf("unchanged secret values report %+v", d)
	}
}

// A configuration accepted before as it is is not checked again, but the
// VM's restart (healthGate.vm) still gets its configChange line in Check.
func TestCheckSameConfigurationKeepsTheVMRestartLine(t *testing.T) {
	t.Parallel()

	cfg := testConfig(t, "v1.12.5")
	inputs := func(vm string) property.Map {
		return property.NewMap(map[string]property.Value{
			"node":                 property.New("10.5.0.2"),
			"machineConfiguration": property.New(cfg).WithSecret(true),
			"clientConfiguration": property.New(map[string]property.Value{
				"caCertificate": property.New("x"), "clientCertificate": property.New("y"), "clientKey": property.New("z"),
			}),
			"healthGate": property.New(map[string]property.Value{
				"controlPlanes": property.New([]property.Value{property.New("10.5.0.2")}), "vm": property.New(vm),
			}),
		})
	}

	resp, err := (&ConfigurationApply{}).Check(context.Background(), infer.CheckRequest{
		OldInputs: inputs("cores=2 memory=4096MiB"), NewInputs: inputs("cores=4 memory=4096MiB"),
	})
	if err != nil || len(resp.Failures) != 0 {
		t.Fatalf("check: %v %v", err, resp.Failures)
	}

	if want := "reboot: VM restart (cores 2 → 4)"; resp.Inputs.ConfigChange == nil || *resp.Inputs.ConfigChange != want {
		t.Errorf("configChange %v, want %q", resp.Inputs.ConfigChange, want)
	}
}

// A gate stored by a provider before some of its keys (diskStorage,
// dataDisks, or any later one), with inputs otherwise equal: an update, not
// a replacement, that Update runs without touching the node, so that the
// next one finds the keys and the node is left alone (LeavesNodeAlone;
// review s14c S3: a no-op up kept the old outputs, and the node was never
// settled again). Said once per process, not once per node.
func TestDiffGateKeysAddedUpdateOnlyTheState(t *testing.T) {
	t.Parallel()

	gate := func(vm string) *HealthGate { return &HealthGate{ControlPlanes: []string{"10.5.0.2"}, Vm: &vm} }
	oldGate := "cores=2 sockets=1 cpu=x86-64-v2-AES memory=4096MiB cloudInit=5f1c diskStorage=local-lvm"
	newGate := oldGate + " dataDisks="

	args := ConfigurationApplyArgs{Node: "10.5.0.2", MachineConfiguration: testConfig(t, "v1.12.5"), HealthGate: gate(oldGate)}
	old := appliedState(t, args, "v1.12.5")
	next := withView(t, args)
	next.HealthGate = gate(newGate)

	d, notes := diffConfigurationApply(old, next)
	if !d.HasChanges || d.DeleteBeforeReplace || len(d.DetailedDiff) != 1 || d.DetailedDiff["healthGate.vm"].Kind != p.Update {
		t.Fatalf("state gate without dataDisks: %+v", d)
	}

	if len(notes) != 1 || notes[0].warning || notes[0].once == "" ||
		!strings.Contains(notes[0].text, "state only, no node is touched") || !strings.Contains(notes[0].text, "without dataDisks") {
		t.Errorf("notes %+v", notes)
	}

	// What Update does with it: nothing on the node, no health check.
	if needsNode(old, next) || vmChange(old.HealthGate, next.HealthGate) != [2]string{} || vmChangedByCheck(old.HealthGate, next, false) {
		t.Error("Update would touch the node or wait for the cluster's health")
	}

	// Once recorded, the node is left alone and nothing differs.
	recorded := appliedState(t, next, "v1.12.5")
	if d, notes := diffConfigurationApply(recorded, next); d.HasChanges || len(notes) > 0 {
		t.Errorf("after the update: %v %v", d.DetailedDiff, notes)
	}

	cfg := next.MachineConfiguration
	if next.MachineId = ptrTo("uuid-a"); !LeavesNodeAlone(recorded, next, cfg, "v1.12.5") || LeavesNodeAlone(old, next, cfg, "v1.12.5") {
		t.Error("LeavesNodeAlone should hold after the update and not before")
	}

	// Another change in the same update records the gate anyway: no note.
	next.MachineId, next.Endpoints = nil, []string{"10.5.0.9"}
	if d, notes := diffConfigurationApply(old, next); len(d.DetailedDiff) != 1 || d.DetailedDiff["endpoints"].Kind != p.Update || len(notes) > 0 {
		t.Errorf("with an endpoint change: %v %v", d.DetailedDiff, notes)
	}

	// A key gone or a value changed is a VM change, as before.
	next.Endpoints = nil
	next.HealthGate = gate("cores=4 sockets=1 cpu=x86-64-v2-AES memory=4096MiB cloudInit=5f1c diskStorage=local-lvm dataDisks=")
	if d, _ := diffConfigurationApply(old, next); d.DetailedDiff["healthGate.vm"].Kind != p.Update || len(vmChange(old.HealthGate, next.HealthGate)[0]) == 0 {
		t.Errorf("cores changed: %v", d.DetailedDiff)
	}
}

// The note of a state-only gate update is said for the first node only.
func TestOnceNotes(t *testing.T) {
	t.Parallel()

	var o onceNotes
	if !o.first("gate keys dataDisks") || o.first("gate keys dataDisks") || !o.first("gate keys diskStorage dataDisks") {
		t.Error("each key is said once")
	}
}
