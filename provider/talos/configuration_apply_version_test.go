package talos

import (
	"context"
	"strings"
	"testing"

	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

// A talosVersion other than the installer image's tag would upgrade the node
// with the image's version and then wait for talosVersion forever.
func TestCheckRefusesTalosVersionOtherThanImageTag(t *testing.T) {
	t.Parallel()

	cfg := testConfig(t, "v1.12.6")
	ca := &ConfigurationApply{}

	check := func(version string) []string {
		resp, err := ca.Check(context.Background(), infer.CheckRequest{NewInputs: property.NewMap(map[string]property.Value{
			"node":                 property.New("10.5.0.2"),
			"talosVersion":         property.New(version),
			"machineConfiguration": property.New(cfg).WithSecret(true),
			"clientConfiguration": property.New(map[string]property.Value{
				"caCertificate": property.New("x"), "clientCertificate": property.New("y"), "clientKey": property.New("z"),
			}),
		})})
		if err != nil {
			t.Fatal(err)
		}

		var out []string
		for _, f := range resp.Failures {
			out = append(out, f.Property+": "+f.Reason)
		}

		return out
	}

	fails := check("v1.12.7")
	if len(fails) != 1 || !strings.HasPrefix(fails[0], "talosVersion: ") ||
		!strings.Contains(fails[0], "v1.12.7") || !strings.Contains(fails[0], ":v1.12.6") {
		t.Fatalf("talosVersion v1.12.7 with an image tagged v1.12.6: failures %q", fails)
	}

	// A release line does not say which release the node upgrades to.
	if fails := check("v1.12"); len(fails) != 1 || !strings.Contains(fails[0], `talosVersion: "v1.12" names a release line, not a release`) {
		t.Errorf("talosVersion v1.12: failures %q", fails)
	}

	for _, same := range []string{"v1.12.6", "1.12.6"} {
		if fails := check(same); len(fails) != 0 {
			t.Errorf("talosVersion %s with an image tagged v1.12.6: failures %q", same, fails)
		}
	}
}

// Diff checks the upgrade it would run as the node would: refused jumps,
// skipped minors and downgrades to an older minor fail the preview, naming
// the version to take.
func TestDiffChecksTheTalosUpgrade(t *testing.T) {
	t.Parallel()

	args := ConfigurationApplyArgs{Node: "10.5.0.2", MachineConfiguration: testConfig(t, "v1.12.5")}

	for _, tc := range []struct {
		running, wantErr string
	}{
		{running: "v1.12.4"},
		{running: "v1.12.5"},
		{running: "v1.11.6"},
		{running: "v1.13.8", wantErr: "keep talosVersion on Talos 1.13"}, // a downgrade by one minor (talosconfig.checkDowngrade)
		{running: "v1.10.7", wantErr: "set talosVersion to v1.11.6 first"},
		{running: "v1.9.5", wantErr: "refuses to move to v1.12.5"},
		{running: "v1.14.1", wantErr: "too new to downgrade to Talos 1.12.5"},
	} {
		err := checkNodeUpgrade(ConfigurationApplyState{RunningVersion: tc.running}, args)

		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("from %s: unexpected error %v", tc.running, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "node 10.5.0.2")):
			t.Errorf("from %s: error %v, want one naming the node and %q", tc.running, err, tc.wantErr)
		}
	}

	// Through Diff: the refusal fails the preview.
	_, err := (&ConfigurationApply{}).Diff(context.Background(), infer.DiffRequest[ConfigurationApplyArgs, ConfigurationApplyState]{
		State:  appliedState(t, args, "v1.9.5"),
		Inputs: withView(t, args),
	})
	if err == nil {
		t.Fatal("Diff accepts an upgrade from v1.9.5 to v1.12.5")
	}
}
