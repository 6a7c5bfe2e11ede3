package talosapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// Mode reboot reboots a node even when it runs the configuration already
// (machined's ApplyConfiguration, REBOOT: SetPersistedConfig, then the
// reboot sequence; siderolabs/talos v1.12.5 v1alpha1_server.go), so the
// active configuration's digest cannot tell the new boot from the old one:
// Apply returns once the node answers from another boot.
func TestRebootApplyOfTheRunningConfigWaitsForTheReboot(t *testing.T) {
	t.Parallel()

	s := simtest.Start(t)
	cp := simtest.AddressBlock()(2)
	node := simtest.Boot(s, "cp1", cp, "scsi0")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	o := simOptions(t)
	target := talosapi.Target{Node: cp.String(), Creds: adminCreds(t)}
	cfg := nodeConfig(t, talosconfig.RoleControlPlane, cp, "/dev/sda", simtest.Version)

	if _, err := talosapi.Apply(ctx, target, talosapi.ApplyRequest{Config: cfg}, o); err != nil {
		t.Fatal(err)
	}

	boots := node.Status().Boots

	res, err := talosapi.Apply(ctx, target, talosapi.ApplyRequest{Config: cfg, Mode: talosapi.ApplyReboot}, o)
	if err != nil || res.Applied != talosapi.ApplyReboot {
		t.Fatalf("Apply mode reboot = %+v, %v", res, err)
	}

	if st := node.Status(); st.Boots <= boots || st.Phase != "running" {
		t.Fatalf("Apply mode reboot returned with the node at boot %d, %s (before: boot %d): it had not rebooted", st.Boots, st.Phase, boots)
	}
}
