package talosapi_test

import (
	"context"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	simtalos "github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// A staged upgrade's install runs in a boot of its own. Talos 1.13 and
// later answer from it (apid starts before the install: siderolabs/talos
// v1.14.0-rc.1 v1alpha1_sequencer.go Initialize) with the version it boots,
// a new boot ID and stage installing, which the lab now imitates; 1.12
// answers nothing there. Upgrade must wait through that boot on both: not
// end at the new boot ID of a same-version upgrade (waitRebooted), nor at
// the old version of a version upgrade (waitVersion), but once the node
// runs the new image, in stage running. The lab holds the install
// (StagedInstallGate) until Upgrade has seen the install boot several
// times; Upgrade returning while it is held is the failure.
func TestStagedUpgradeWaitsThroughTheInstallBoot(t *testing.T) {
	t.Parallel()

	for _, c := range []struct {
		boot, to string
		answers  bool
	}{
		{"v1.12.5", "v1.12.5", false},
		{"v1.14.1", "v1.14.1", true},
		{"v1.13.9", "v1.14.1", true},
	} {
		t.Run(c.boot+"-to-"+c.to, func(t *testing.T) {
			t.Parallel()

			s := simtest.Start(t)
			cp := simtest.AddressBlock()(2)
			node := simtest.BootVersion(s, "cp1", cp, "scsi0", c.boot)

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()

			o := simOptions(t)
			target := talosapi.Target{Node: cp.String(), Creds: adminCreds(t)}

			applyAndBootstrap(ctx, t, target, cp, c.boot, o)

			schematic := simtest.Schematic
			if c.to == c.boot {
				schematic = s.Catalog().Register("siderolabs/qemu-guest-agent", "siderolabs/iscsi-tools")
			}

			gate := make(chan struct{})
			release := sync.OnceFunc(func() { close(gate) })
			t.Cleanup(release)
			s.SetFaults(simtalos.Faults{StagedInstallGate: gate})

			// Every attempt is reported (ReportEvery): count those that saw
			// the install boot.
			var seen atomic.Int32

			o.ReportEvery = time.Nanosecond
			o.Progress = func(msg string) {
				if strings.Contains(msg, "Talos "+c.boot+", stage installing") {
					seen.Add(1)
				}

				t.Log(msg)
			}

			done := make(chan error, 1)
			image := "factory.talos.dev/nocloud-installer/" + schematic + ":" + c.to

			go func() {
				_, err := talosapi.Upgrade(ctx, target, talosapi.UpgradeRequest{Image: image, Stage: true, EvenIfSameVersion: c.to == c.boot}, o)
				done <- err
			}()

			// Bounded by the context; a returned Upgrade ends it at once.
			for node.Status().Phase != simtalos.PhaseInstalling || c.answers && seen.Load() < 3 {
				select {
				case err := <-done:
					t.Fatalf("Upgrade returned (%v) while the node was held in the install boot (stage installing seen %d times)", err, seen.Load())
				case <-ctx.Done():
					t.Fatalf("the node never reached the install boot, or Upgrade never saw it (%d times): %+v", seen.Load(), node.Status())
				case <-time.After(5 * time.Millisecond):
				}
			}

			release()

			if err := <-done; err != nil {
				t.Fatal(err)
			}

			if st := node.Status(); st.Phase != simtalos.PhaseRunning || st.Image.Version != c.to || st.Image.Schematic != schematic {
				t.Fatalf("Upgrade returned with the node %s on %s: want it running %s (schematic %s)", st.Phase, st.Image, c.to, schematic)
			}
		})
	}
}

// Apply with applyMode reboot on Talos 1.14, in the boot that installs a
// staged upgrade: the node applies the configuration (NO_REBOOT: 1.14 has
// no mode REBOOT) and accepts the Reboot that follows, whose sequence the
// install's lock refuses ("sequence not started: locked", without an
// actor; Reboot asks no takeover: v1.14.0-rc.1 v1alpha1_server.go Reboot).
// Apply ends at once, saying so, while the install goes on. Before, the
// wait for the new boot ran to its timeout (and the lab refused the apply).
func TestRebootApplyInTheInstallBootIsLocked(t *testing.T) {
	t.Parallel()

	const version = "v1.14.1"

	ctx, target, o, node, release, upgraded := holdStagedInstall(t, version)

	cfg := nodeConfig(t, talosconfig.RoleControlPlane, netip.MustParseAddr(target.Node), "/dev/sda", version, "machine:\n  env:\n    HTTP_PROXY: http://proxy.example:3128\n")

	_, err := talosapi.Apply(ctx, target, talosapi.ApplyRequest{Config: cfg, Mode: talosapi.ApplyReboot}, o)
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "accepted the reboot but did not start it") ||
		!strings.Contains(err.Error(), "sequence not started: locked") {
		t.Fatalf("Apply mode reboot in the install boot = %v; want the node's LOCKED before the timeout", err)
	}

	if p := node.Status().Phase; p != simtalos.PhaseInstalling {
		t.Errorf("the node is %s after the refused reboot, want still installing", p)
	}

	release()

	if err := <-upgraded; err != nil {
		t.Fatal(err)
	}
}

// A reset asked of a node in the boot that installs a staged upgrade (Talos
// 1.13+ answers there) is accepted and never started: the install sequence
// holds machined's lock, which publishes "sequence not started: locked"
// without an actor. Reset ends at once with an error that says so, while
// the install goes on. Before, the wait followed the reset's actor only and
// ran to its timeout (and the lab refused the call).
func TestResetInTheInstallBootIsLocked(t *testing.T) {
	t.Parallel()

	ctx, target, o, node, release, upgraded := holdStagedInstall(t, "v1.14.1")

	_, err := talosapi.Reset(ctx, target, talosapi.ResetRequest{}, o)
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "sequence not started: locked") || !strings.Contains(err.Error(), "pulumi up") {
		t.Fatalf("Reset in the install boot = %v; want the node's LOCKED before the timeout", err)
	}

	if p := node.Status().Phase; p != simtalos.PhaseInstalling {
		t.Errorf("the node is %s after the refused reset, want still installing", p)
	}

	release()

	if err := <-upgraded; err != nil {
		t.Fatal(err)
	}
}

// holdStagedInstall boots a bootstrapped control plane on version and
// stages a same-version upgrade whose install boot the lab holds (the
// StagedInstallGate fault) until release: it returns once the node is
// installing, with the Upgrade's result to come on upgraded. The context
// ends with the test.
func holdStagedInstall(t *testing.T, version string) (
	ctx context.Context, target talosapi.Target, o talosapi.Options, node *simtalos.Node, release func(), upgraded <-chan error,
) {
	t.Helper()

	s := simtest.Start(t)
	cp := simtest.AddressBlock()(2)
	node = simtest.BootVersion(s, "cp1", cp, "scsi0", version)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)

	o = simOptions(t)
	target = talosapi.Target{Node: cp.String(), Creds: adminCreds(t)}

	applyAndBootstrap(ctx, t, target, cp, version, o)

	gate := make(chan struct{})
	release = sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release)
	s.SetFaults(simtalos.Faults{StagedInstallGate: gate})

	image := "factory.talos.dev/nocloud-installer/" + s.Catalog().Register("siderolabs/qemu-guest-agent", "siderolabs/iscsi-tools") + ":" + version
	done := make(chan error, 1)

	go func() {
		_, err := talosapi.Upgrade(ctx, target, talosapi.UpgradeRequest{Image: image, Stage: true, EvenIfSameVersion: true}, o)
		done <- err
	}()

	// Bounded by the context.
	for node.Status().Phase != simtalos.PhaseInstalling {
		select {
		case <-ctx.Done():
			t.Fatalf("the node never reached the install boot: %+v", node.Status())
		case <-time.After(5 * time.Millisecond):
		}
	}

	return ctx, target, o, node, release, done
}
