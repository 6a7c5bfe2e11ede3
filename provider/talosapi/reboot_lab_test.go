package talosapi_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	simtalos "github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// Mode reboot reboots a node even when it runs the configuration already
// (machined's ApplyConfiguration, REBOOT: SetPersistedConfig, then the
// reboot sequence; siderolabs/talos v1.12.5 v1alpha1_server.go), so the
// active configuration's digest cannot tell the new boot from the old one:
// Apply returns once the node answers from another boot.
func TestRebootApplyOfTheRunningConfigWaitsForTheReboot(t *testing.T) {
	t.Parallel()

	lab := bootOneCP(t, simtest.Version, 2*time.Minute)
	node, ctx, o, target := lab.node, lab.ctx, lab.o, lab.target
	cfg := lab.config(t)

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

// A same-version upgrade (another schematic) cut by its VM stopping in the
// middle of the install leaves the old image: started again, the node
// boots it, with a new boot ID and the same version. Upgrade says the
// upgrade was lost instead of reporting it done.
func TestSameVersionUpgradeCutByAStopIsLost(t *testing.T) {
	t.Parallel()

	s := simtest.Start(t)
	cp := simtest.AddressBlock()(2)
	vm := simtest.NewVM("cp1", cp, "scsi0")
	node := vm.PowerOn(s)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	o := simOptions(t)
	target := talosapi.Target{Node: cp.String(), Creds: adminCreds(t)}

	applyAndBootstrap(ctx, t, target, cp, simtest.Version, o)

	s.SetFaults(simtalos.Faults{StopInUpgrade: 1})

	other := "factory.talos.dev/nocloud-installer/" + s.Catalog().Register("siderolabs/qemu-guest-agent", "siderolabs/iscsi-tools") + ":" + simtest.Version
	done := make(chan error, 1)

	go func() {
		_, err := talosapi.Upgrade(ctx, target, talosapi.UpgradeRequest{Image: other, EvenIfSameVersion: true}, o)
		done <- err
	}()

	select {
	case err := <-done:
		t.Fatalf("Upgrade returned (%v) before the VM stopped in the install", err)
	case <-node.Done():
	}

	vm.PowerOn(s)

	err := <-done

	var lost *talosapi.SchematicLostError
	if !errors.As(err, &lost) || lost.Running != simtest.Schematic || lost.Image != other {
		t.Fatalf("Upgrade = %v; want a SchematicLostError naming the schematic the node still runs (%s)", err, simtest.Schematic)
	}

	for _, want := range []string{"the upgrade was lost", "`pulumi up` again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// Talos 1.14 refuses apply mode reboot on a configured node (Unimplemented;
// the lab as siderolabs/talos v1.14.0-rc.1 v1alpha1_server.go). Apply mode
// reboot then applies without a reboot and reboots the node through the
// Reboot API: it returns once the node runs the configuration from a new
// boot. Before, the apply failed with the node's refusal.
func TestRebootApplyOnTalos114RebootsThroughTheAPI(t *testing.T) {
	t.Parallel()

	const version = "v1.14.1"

	lab := bootOneCP(t, version, 2*time.Minute)
	node, ctx, o, target := lab.node, lab.ctx, lab.o, lab.target
	cfg := lab.config(t)

	if _, err := talosapi.Apply(ctx, target, talosapi.ApplyRequest{Config: cfg}, o); err != nil {
		t.Fatal(err)
	}

	boots := node.Status().Boots

	res, err := talosapi.Apply(ctx, target, talosapi.ApplyRequest{Config: cfg, Mode: talosapi.ApplyReboot}, o)
	if err != nil || res.Applied != talosapi.ApplyReboot || !strings.Contains(res.Details, "Reboot API") {
		t.Fatalf("Apply mode reboot on Talos %s = %+v, %v", version, res, err)
	}

	if st := node.Status(); st.Boots <= boots || st.Phase != "running" || st.Image.Version != version {
		t.Fatalf("Apply mode reboot returned with the node at boot %d, %s, %s (before: boot %d): it had not rebooted", st.Boots, st.Phase, st.Image.Version, boots)
	}
}

// Talos 1.14 applies AUTO as NO_REBOOT without checking the change for a
// reboot (siderolabs/talos 995bc30d5; v1.14.0-rc.1 v1alpha1_server.go
// ApplyConfiguration sets the persistent and the active configuration): a
// machine.env change, which reboots a 1.12 node, is applied at once, the
// node keeps its boot, and Apply names machine.env as pending (it takes
// effect at the next reboot) instead of reporting a plain live apply.
func TestAutoApplyOnTalos114LeavesARebootChangePending(t *testing.T) {
	t.Parallel()

	for _, version := range []string{simtest.Version, "v1.14.1"} {
		lab := bootOneCP(t, version, 2*time.Minute)
		node, ctx, o, target := lab.node, lab.ctx, lab.o, lab.target
		base := lab.config(t)
		env := lab.config(t, "machine:\n  env:\n    https_proxy: http://proxy.lan:3128\n")

		if _, err := talosapi.Apply(ctx, target, talosapi.ApplyRequest{Config: base}, o); err != nil {
			t.Fatal(err)
		}

		boots := node.Status().Boots

		res, err := talosapi.Apply(ctx, target, talosapi.ApplyRequest{Config: env, Running: base}, o)
		if err != nil {
			t.Fatalf("Talos %s: %v", version, err)
		}

		nc, _, _, err := talosapi.ReadConfig(ctx, target, o)
		if err != nil {
			t.Fatal(err)
		}

		if version == simtest.Version {
			if res.Applied != talosapi.ApplyReboot || len(res.Pending) != 0 || node.Status().Boots <= boots {
				t.Errorf("Talos %s: applied %s, pending %v, boot %d (before %d): want a reboot", version, res.Applied, res.Pending, node.Status().Boots, boots)
			}

			continue
		}

		if res.Applied != talosapi.ApplyNoReboot || strings.Join(res.Pending, ",") != "machine.env" ||
			node.Status().Boots != boots || nc.ActiveDigest != res.Digest || nc.PersistentDigest != res.Digest {
			t.Errorf("Talos %s: applied %s, pending %v, boot %d (before %d), active is the new configuration %v, saved %v: "+
				"want it applied and saved without a reboot, machine.env pending", version, res.Applied, res.Pending,
				node.Status().Boots, boots, nc.ActiveDigest == res.Digest, nc.PersistentDigest == res.Digest)
		}
	}
}

// Talos 1.14 accepts a try apply of a change that needs a reboot (older
// Talos refused it) and makes it the active configuration only, unsaved
// (v1.14.0-rc.1 v1alpha1_server.go ApplyConfiguration, TRY: SetConfig
// without SetPersistedConfig): the node does not reboot, keeps its saved
// configuration, and Apply names machine.env as pending, which the caller
// reports as never taking effect. Before, a try apply named nothing.
func TestTryApplyOnTalos114NamesTheRebootChange(t *testing.T) {
	t.Parallel()

	const version = "v1.14.1"

	s := simtest.Start(t)
	cp := simtest.AddressBlock()(2)
	node := simtest.BootVersion(s, "cp1", cp, "scsi0", version)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	o := simOptions(t)
	target := talosapi.Target{Node: cp.String(), Creds: adminCreds(t)}
	base := nodeConfig(t, talosconfig.RoleControlPlane, cp, "/dev/sda", version)
	env := nodeConfig(t, talosconfig.RoleControlPlane, cp, "/dev/sda", version, "machine:\n  env:\n    https_proxy: http://proxy.lan:3128\n")

	first, err := talosapi.Apply(ctx, target, talosapi.ApplyRequest{Config: base}, o)
	if err != nil {
		t.Fatal(err)
	}

	boots := node.Status().Boots

	res, err := talosapi.Apply(ctx, target, talosapi.ApplyRequest{Config: env, Running: base, Mode: talosapi.ApplyTry}, o)
	if err != nil {
		t.Fatal(err)
	}

	nc, _, _, err := talosapi.ReadConfig(ctx, target, o)
	if err != nil {
		t.Fatal(err)
	}

	// (The lab's time scale 0 rolls the try back at once: the active
	// configuration is not compared.)
	if res.Applied != talosapi.ApplyTry || strings.Join(res.Pending, ",") != "machine.env" || node.Status().Boots != boots ||
		nc.PersistentDigest != first.Digest {
		t.Errorf("try on Talos %s: applied %s, pending %v, boot %d (before %d), saved is the old configuration %v: "+
			"want it unsaved, no reboot, machine.env pending", version, res.Applied, res.Pending, node.Status().Boots, boots,
			nc.PersistentDigest == first.Digest)
	}
}

// applyAndBootstrap applies a control plane configuration of version to the
// node at cp (target) and bootstraps it.
func applyAndBootstrap(ctx context.Context, t *testing.T, target talosapi.Target, cp netip.Addr, version string, o talosapi.Options) {
	t.Helper()

	if _, err := talosapi.Apply(ctx, target, talosapi.ApplyRequest{Config: nodeConfig(t, talosconfig.RoleControlPlane, cp, "/dev/sda", version)}, o); err != nil {
		t.Fatal(err)
	}

	if _, err := talosapi.Bootstrap(ctx, target, o); err != nil {
		t.Fatal(err)
	}
}
