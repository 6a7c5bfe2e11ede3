package cluster

import (
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// A machine.env change reboots a Talos 1.12 node (AUTO: the change is not
// live-applicable), while Talos 1.14 applies it without a reboot and
// without a reboot check (siderolabs/talos 995bc30d5; v1.14.0-rc.1
// v1alpha1_server.go ApplyConfiguration): the summary says the 1.14 node
// is updated in place and the change waits for its next reboot.
func TestConfigEffectPerTalosVersion(t *testing.T) {
	t.Parallel()
	bundle, err := talosconfig.NewSecrets("v1.12.5", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	gen := func(patches ...string) string {
		res, err := talosconfig.Generate(talosconfig.Input{
			ClusterName: "lab", Endpoint: "https://10.5.0.5:6443", Role: talosconfig.RoleWorker, Secrets: bundle,
			TalosVersion: "v1.12.5", InstallDisk: "/dev/sda", Patches: patches,
		})
		if err != nil {
			t.Fatal(err)
		}
		return res.Config
	}
	current, next := gen(), gen("machine:\n  env:\n    HTTP_PROXY: http://proxy:3128\n")

	for _, c := range []struct {
		version string
		action  plan.Action
		reason  string
	}{
		{"v1.12.5", plan.ActionReboot, "machine.env"},
		{"", plan.ActionReboot, "machine.env"},
		{"v1.14.1", plan.ActionUpdate, "machine.env at the next reboot: Talos v1.14.1 applies without one"},
	} {
		action, reason, err := configEffect(current, next, c.version)
		if err != nil || action != c.action || reason != c.reason {
			t.Errorf("Talos %q: %v, %q, %v; want %v, %q", c.version, action, reason, err, c.action, c.reason)
		}
	}
}
