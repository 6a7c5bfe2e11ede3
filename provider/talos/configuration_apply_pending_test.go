package talos

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
	"github.com/proxmoxtalos/proxmoxtalos/provider/internal/enginetest"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	simtalos "github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// An update of a Talos 1.14 node with a machine.env change (which reboots a
// 1.12 node under applyMode auto) succeeds without a reboot, as Talos 1.14
// applies it (siderolabs/talos 995bc30d5; v1.14.0-rc.1 v1alpha1_server.go
// ApplyConfiguration), and warns that machine.env takes effect only at the
// node's next reboot, naming the node and how to reboot it.
func TestUpdateOnTalos114WarnsOfAChangePendingTheNextReboot(t *testing.T) {
	t.Parallel()

	const version = "v1.14.1"

	cp, node, c, base, env := bootWithEnvChange(t, version)

	boots, resp, logs, err := createThenUpdate(t, c, cp.String(), base, env, nil, node)
	if err != nil || resp.Output.AppliedMode != "no-reboot" || node.Status().Boots != boots {
		t.Fatalf("update: applied %q, %v, boot %d (before %d): want it applied without a reboot", resp.Output.AppliedMode, err, node.Status().Boots, boots)
	}

	warnings := strings.Join(enginetest.Messages(logs, pulumirpc.LogSeverity_WARNING), "\n")
	want := "node " + cp.String() + " runs Talos " + version + ", which applied the configuration without a reboot: changes to machine.env take effect only at the node's next reboot"
	if !strings.Contains(warnings, want) || !strings.Contains(warnings, "talosctl -n "+cp.String()+" reboot") {
		t.Errorf("warnings %q lack %q and how to reboot", warnings, want)
	}
}

// applyMode try on Talos 1.14 with a machine.env change: Talos accepts it
// without a reboot and does not save it (v1.14.0-rc.1 v1alpha1_server.go
// ApplyConfiguration, TRY), so machine.env never takes effect; the update
// warns so, naming the node and the path. Before, it said nothing.
func TestTryUpdateOnTalos114WarnsTheRebootChangeNeverTakesEffect(t *testing.T) {
	t.Parallel()

	const version = "v1.14.1"

	cp, node, c, base, env := bootWithEnvChange(t, version)
	try := map[string]property.Value{"applyMode": property.New("try"), "tryTimeout": property.New("1h")}

	boots, resp, logs, err := createThenUpdate(t, c, cp.String(), base, env, try, node)
	if err != nil || resp.Output.AppliedMode != "try" || node.Status().Boots != boots {
		t.Fatalf("update: applied %q, %v, boot %d (before %d): want it applied in try mode without a reboot", resp.Output.AppliedMode, err, node.Status().Boots, boots)
	}

	warnings := strings.Join(enginetest.Messages(logs, pulumirpc.LogSeverity_WARNING), "\n")
	want := "node " + cp.String() + " runs Talos " + version + ", which applied the configuration in try mode without a reboot: changes to machine.env take effect only at a reboot"
	if !strings.Contains(warnings, want) || !strings.Contains(warnings, "so they do not take effect") {
		t.Errorf("warnings %q lack %q and that they do not take effect", warnings, want)
	}
}

// bootWithEnvChange boots a control plane node cp1 on Talos version in the
// sim, and returns its address, the node, its cluster, a configuration of
// it, and the same with a machine.env change.
func bootWithEnvChange(t *testing.T, version string) (netip.Addr, *simtalos.Node, *simCluster, string, string) {
	t.Helper()

	sim := simtest.Start(t)
	cp := simtest.AddressBlock()(2)
	node := simtest.BootVersion(sim, "cp1", cp, "scsi0", version)

	c := newSimCluster(t, cp)
	base := c.config(talosconfig.RoleControlPlane, "/dev/sda", version)
	env := c.config(talosconfig.RoleControlPlane, "/dev/sda", version, "machine:\n  env:\n    https_proxy: http://proxy.lan:3128\n")

	return cp, node, c, base, env
}

// createThenUpdate creates a ConfigurationApply of cfg on the node at addr,
// then updates it to next with extra inputs. It returns the node's boot count
// taken just before the update, the update's response, its engine log
// and its error.
func createThenUpdate(t *testing.T, c *simCluster, addr, cfg, next string, extra map[string]property.Value, node *simtalos.Node) (int, infer.UpdateResponse[ConfigurationApplyState], []*pulumirpc.LogRequest, error) {
	t.Helper()

	s := nodeServer(t, nil)
	apply := newRes(t, s, "ConfigurationApply", "cp1")
	if err := apply.create(applyInputs(c, addr, cfg, nil)); err != nil {
		t.Fatal(err)
	}

	prev, _, err := framework.DecodeInputs[ConfigurationApplyState](t.Context(), apply.state)
	if err != nil {
		t.Fatal(err)
	}

	news, _, err := framework.DecodeInputs[ConfigurationApplyArgs](t.Context(), apply.check(applyInputs(c, addr, next, extra)))
	if err != nil {
		t.Fatal(err)
	}

	boots := node.Status().Boots

	var resp infer.UpdateResponse[ConfigurationApplyState]
	logs := enginetest.Run(t, func(ctx context.Context) {
		resp, err = (&ConfigurationApply{opts: fastOpts}).Update(ctx,
			infer.UpdateRequest[ConfigurationApplyArgs, ConfigurationApplyState]{ID: apply.id, Inputs: news, State: prev})
	})

	return boots, resp, logs, err
}
