package talos

import (
	"context"
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

	if txt := noteText(notes); !strings.Contains(txt, "applied without a reboot") {
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

	if txt := noteText(notes); !strings.Contains(txt, "the node reboots (because of machine.env") {
		t.Fatalf("notes = %q", txt)
	}

	noReboot := ApplyMode("no-reboot")
	next.ApplyMode = &noReboot

	_, notes = diffConfigurationApply(old, withView(t, next))
	if len(notes) != 1 || !notes[0].warning || !strings.Contains(notes[0].text, "applyMode is no-reboot: the update will fail") {
		t.Fatalf("notes = %+v", notes)
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

	if txt := noteText(notes); !strings.Contains(txt, "Talos upgrade v1.12.4 → v1.12.5") {
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

	// Update: the view is derived.
	resp, err = ca.Check(context.Background(), infer.CheckRequest{OldInputs: inputs, NewInputs: inputs})
	if err != nil || len(resp.Failures) != 0 {
		t.Fatalf("check: %v %v", err, resp.Failures)
	}

	if resp.Inputs.ConfigView["machine.type"] != "controlplane" || !strings.HasPrefix(resp.Inputs.ConfigView["machine.token"], "(sensitive") {
		t.Fatalf("configView not derived: type=%q token=%q", resp.Inputs.ConfigView["machine.type"], resp.Inputs.ConfigView["machine.token"])
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
		"configChange":         property.New("earlier change (config 00000000)"),
	})

	// Same configuration: the old description stays, so it never shows as a change.
	if got := deriveConfigChange(old, ConfigurationApplyArgs{MachineConfiguration: cfg}); got == nil || *got != "earlier change (config 00000000)" {
		t.Fatalf("unchanged: %v", got)
	}

	next := testConfig(t, "v1.12.5")

	got := deriveConfigChange(old, ConfigurationApplyArgs{MachineConfiguration: next})
	if got == nil || !strings.HasPrefix(*got, "Talos upgrade v1.12.4 → v1.12.5 through the Upgrade API") {
		t.Fatalf("upgrade: %v", got)
	}

	digest, _ := talosapi.ConfigDigest([]byte(next))
	if !strings.HasSuffix(*got, "(config "+digest[:8]+")") {
		t.Fatalf("no digest of the new configuration: %q", *got)
	}
}
