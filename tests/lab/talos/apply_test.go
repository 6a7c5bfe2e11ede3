package talos

import (
	"context"
	"strings"
	"testing"

	"github.com/cosi-project/runtime/pkg/safe"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	configres "github.com/siderolabs/talos/pkg/machinery/resources/config"
)

const exclusionLabel = `node.kubernetes.io/exclude-from-external-load-balancers: ""`

func withLabel(cfg []byte, label string) []byte {
	return []byte(strings.Replace(string(cfg), exclusionLabel, exclusionLabel+"\n        "+label, 1))
}

func withEnv(cfg []byte) []byte {
	return []byte(strings.Replace(string(cfg), "    kubelet:\n", "    env:\n        LAB_PROXY: http://proxy.lab:3128\n    kubelet:\n", 1))
}

// nodeConfig reads a MachineConfig resource (v1alpha1 = active,
// persistent = what the next boot loads) over COSI, as the provider does.
func nodeConfig(t *testing.T, c *client.Client, id string) string {
	t.Helper()

	mc, err := safe.StateGetByID[*configres.MachineConfig](context.Background(), c.COSI, id)
	if err != nil {
		t.Fatal(err)
	}

	b, err := mc.Provider().EncodeBytes()
	if err != nil {
		t.Fatal(err)
	}

	return string(b)
}

func apply(t *testing.T, c *client.Client, cfg []byte, mode machine.ApplyConfigurationRequest_Mode) (*machine.ApplyConfigurationResponse, error) {
	t.Helper()

	return c.ApplyConfiguration(ctxT(t), &machine.ApplyConfigurationRequest{Data: cfg, Mode: mode})
}

func TestApplyModes(t *testing.T) {
	t.Parallel()

	tc := bootCluster(t, clusterOpts{cps: 1})
	tc.bootstrap(t)

	n := tc.cps[0].node
	c := tc.client(t, tc.cps[0])
	boots := n.Status().Boots

	// A label is a live change: NO_REBOOT applies it, no reboot.
	labelled := withLabel(tc.cpConfig, "lab/tier: gold")

	resp, err := apply(t, c, labelled, machine.ApplyConfigurationRequest_NO_REBOOT)
	if err != nil {
		t.Fatal(err)
	}

	if got := resp.Messages[0].ModeDetails; got != "Applied configuration without a reboot" {
		t.Fatalf("mode details = %q", got)
	}

	waitFor(t, "label on the Kubernetes node", func() bool {
		nodes, err := tc.kubeNodes(t)
		if err != nil {
			return false
		}

		cp, _ := nodeByName(nodes, "cp1")

		return cp.Metadata.Labels["lab/tier"] == "gold"
	})

	if !strings.Contains(nodeConfig(t, c, configres.ActiveID), "lab/tier: gold") {
		t.Fatal("active config must hold the label")
	}

	// machine.env needs a reboot: NO_REBOOT is refused with Talos's text.
	envCfg := withEnv(labelled)

	_, err = apply(t, c, envCfg, machine.ApplyConfigurationRequest_NO_REBOOT)
	wantCode(t, err, codes.InvalidArgument, "this config change can't be applied in immediate mode")
	mustContain(t, err, "LAB_PROXY")

	_, err = apply(t, c, envCfg, machine.ApplyConfigurationRequest_TRY)
	wantCode(t, err, codes.InvalidArgument, "this config change can't be applied in immediate mode")

	if n.Status().Boots != boots {
		t.Fatal("refused applies must not reboot")
	}

	// STAGED: persisted now, active after the next reboot.
	staged := withLabel(labelled, "lab/staged: \"yes\"")

	resp, err = apply(t, c, staged, machine.ApplyConfigurationRequest_STAGED)
	if err != nil || resp.Messages[0].ModeDetails != "Staged configuration to be applied after the next reboot" {
		t.Fatalf("staged apply: %v %v", resp, err)
	}

	if strings.Contains(nodeConfig(t, c, configres.ActiveID), "lab/staged") || !strings.Contains(nodeConfig(t, c, configres.PersistentID), "lab/staged") {
		t.Fatal("a staged config must be persisted but not active")
	}

	// AUTO decides: env needs a reboot.
	resp, err = apply(t, c, withEnv(staged), machine.ApplyConfigurationRequest_AUTO)
	if err != nil {
		t.Fatal(err)
	}

	if resp.Messages[0].Mode != machine.ApplyConfigurationRequest_REBOOT ||
		!strings.HasPrefix(resp.Messages[0].ModeDetails, "Applied configuration with a reboot: this config change can't be applied in immediate mode") {
		t.Fatalf("AUTO reply = %v", resp.Messages[0])
	}

	waitFor(t, "reboot into the new config", func() bool {
		st := n.Status()

		return st.Boots > boots && st.Phase == PhaseRunning
	})

	waitFor(t, "apid after reboot", func() bool { _, err := c.Version(ctxT(t)); return err == nil })

	active := nodeConfig(t, c, configres.ActiveID)
	if !strings.Contains(active, "LAB_PROXY") || !strings.Contains(active, "lab/staged") {
		t.Fatalf("active config after reboot lacks the applied changes:\n%s", active)
	}
}

func TestApplyTryRollsBack(t *testing.T) {
	t.Parallel()

	tc := bootCluster(t, clusterOpts{cps: 1})
	c := tc.client(t, tc.cps[0])
	ctx := ctxT(t)

	waitFor(t, "apid", func() bool { _, err := c.Version(ctx); return err == nil })

	resp, err := c.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{
		Data: withLabel(tc.cpConfig, "lab/try: \"1\""), Mode: machine.ApplyConfigurationRequest_TRY,
		TryModeTimeout: durationpb.New(90e9),
	})
	if err != nil {
		t.Fatal(err)
	}

	if !strings.Contains(resp.Messages[0].ModeDetails, "will be automatically reverted back in 1m30s") {
		t.Fatalf("TRY details = %q", resp.Messages[0].ModeDetails)
	}

	if strings.Contains(nodeConfig(t, c, configres.PersistentID), "lab/try") {
		t.Fatal("TRY must not persist the config")
	}

	// At time scale 0 the timeout passes at once: the old config is back.
	waitFor(t, "rollback", func() bool { return !strings.Contains(nodeConfig(t, c, configres.ActiveID), "lab/try") })
}

// Talos 1.14 dropped apply mode REBOOT on configured nodes (Unimplemented,
// nothing saved), applies AUTO as NO_REBOOT and checks no change for a
// reboot (siderolabs/talos 995bc30d5; v1.14.0-rc.1 v1alpha1_server.go
// ApplyConfiguration): machine.env, which 1.12 reboots for, is applied
// without a reboot.
func TestApplyModesOnTalos114(t *testing.T) {
	t.Parallel()

	image := strings.ReplaceAll(installer, testVersion, "v1.14.1")
	tc := bootCluster(t, clusterOpts{cps: 1, version: "v1.14.1", patch: func(s string) string { return strings.ReplaceAll(s, installer, image) }})
	n := tc.cps[0].node
	c := tc.client(t, tc.cps[0])

	waitFor(t, "apid on cp1", func() bool { _, err := c.Version(ctxT(t)); return err == nil })

	if got := n.Status().Image.Version; got != "v1.14.1" {
		t.Fatalf("cp1 runs %s, want v1.14.1", got)
	}

	boots := n.Status().Boots
	envCfg := withEnv(tc.cpConfig)

	_, err := apply(t, c, envCfg, machine.ApplyConfigurationRequest_REBOOT) //nolint:staticcheck // the mode 1.14 refuses
	wantCode(t, err, codes.Unimplemented, "the REBOOT mode is not supported, please use AUTO or NO_REBOOT modes instead")

	if strings.Contains(nodeConfig(t, c, configres.PersistentID), "LAB_PROXY") {
		t.Fatal("a refused REBOOT apply saved the configuration")
	}

	resp, err := apply(t, c, envCfg, machine.ApplyConfigurationRequest_AUTO)
	if err != nil || resp.Messages[0].Mode != machine.ApplyConfigurationRequest_NO_REBOOT ||
		resp.Messages[0].ModeDetails != "Applied configuration without a reboot" {
		t.Fatalf("AUTO on 1.14 = %v, %v; want NO_REBOOT", resp, err)
	}

	if !strings.Contains(nodeConfig(t, c, configres.ActiveID), "LAB_PROXY") || n.Status().Boots != boots {
		t.Fatal("AUTO on 1.14 must apply the configuration at once, without a reboot")
	}
}
