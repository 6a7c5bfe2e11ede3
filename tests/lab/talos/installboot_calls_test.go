package talos

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/api/common"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"google.golang.org/protobuf/proto"
)

// installBoot is a control plane on version held in the boot that installs
// a staged upgrade to another schematic of that version (staged), with its
// API answering; release lets the install go on.
type installBoot struct {
	tc      *testCluster
	v       *vm
	cl      *client.Client
	ctx     context.Context
	staged  string // the schematic the held install installs
	release func()
}

func holdInInstallBoot(t *testing.T, version string) *installBoot {
	t.Helper()

	image := strings.ReplaceAll(installer, testVersion, version)
	tc := bootCluster(t, clusterOpts{cps: 1, version: version, patch: func(s string) string { return strings.ReplaceAll(s, installer, image) }})
	ib := &installBoot{tc: tc, v: tc.cps[0], cl: tc.client(t, tc.cps[0]), ctx: ctxT(t)}

	waitFor(t, "apid", func() bool { _, err := ib.cl.Version(ib.ctx); return err == nil })

	gate := make(chan struct{})
	ib.release = sync.OnceFunc(func() { close(gate) })
	t.Cleanup(ib.release)
	tc.sim.SetFaults(Faults{StagedInstallGate: gate})

	ib.staged = tc.sim.Catalog().Register("siderolabs/qemu-guest-agent", "siderolabs/iscsi-tools")

	// Force: no etcd is bootstrapped on this node.
	if _, err := ib.cl.MachineClient.Upgrade(ib.ctx, &machine.UpgradeRequest{Image: "factory.talos.dev/nocloud-installer/" + ib.staged + ":" + version, Stage: true, Force: true}); err != nil {
		t.Fatal(err)
	}

	waitPhase(t, ib.v.node, PhaseInstalling)
	waitFor(t, "apid in the install boot", func() bool { _, err := ib.cl.Version(ib.ctx); return err == nil })

	return ib
}

// runs waits until the node runs version with schematic.
func (ib *installBoot) runs(t *testing.T, version, schematic string) {
	t.Helper()

	waitFor(t, "the node running "+version+" with schematic "+schematic, func() bool {
		st := ib.v.node.Status()

		return st.Phase == PhaseRunning && st.Image.Version == version && st.Image.Schematic == schematic
	})
}

// Talos 1.13+ serves ApplyConfiguration, Shutdown and staged upgrades in the
// boot that installs a staged upgrade (apid starts before the install
// sequence, and these calls check no stage: siderolabs/talos v1.14.0-rc.1
// v1alpha1_server.go), which the lab refused ("node is not running") or
// lost:
//   - an upgrade staged there is written to META, which the boot cleared
//     when it began (v1alpha1_state.go probeMeta), so the next boot installs
//     it; the lab overwrote it with the state read at the boot's start;
//   - a NO_REBOOT configuration is saved and kept by the install;
//   - Shutdown takes the lock over (WithTakeover), cancels the install
//     (CANCELED, no actor), and the node powers off; started again, it
//     boots the installed version (the staged upgrade was dropped).
func TestInstallBootServesApplyShutdownAndStaging(t *testing.T) {
	t.Parallel()

	const version = "v1.14.1"

	t.Run("staged upgrade", func(t *testing.T) {
		t.Parallel()

		ib := holdInInstallBoot(t, version)
		next := ib.tc.sim.Catalog().Register("siderolabs/iscsi-tools")

		if _, err := ib.cl.MachineClient.Upgrade(ib.ctx, &machine.UpgradeRequest{Image: "factory.talos.dev/nocloud-installer/" + next + ":" + version, Stage: true, Force: true}); err != nil {
			t.Fatalf("staged Upgrade in the install boot: %v", err)
		}

		ib.release()
		ib.runs(t, version, next)
	})

	t.Run("apply", func(t *testing.T) {
		t.Parallel()

		ib := holdInInstallBoot(t, version)
		cfg := append(bytes.Clone(ib.tc.cpConfig), "\n# applied in the install boot\n"...)

		resp, err := ib.cl.ApplyConfiguration(ib.ctx, &machine.ApplyConfigurationRequest{Data: cfg, Mode: machine.ApplyConfigurationRequest_NO_REBOOT})
		if err != nil || resp.GetMessages()[0].GetMode() != machine.ApplyConfigurationRequest_NO_REBOOT {
			t.Fatalf("ApplyConfiguration NO_REBOOT in the install boot = %v, %v", resp, err)
		}

		ib.release()
		ib.runs(t, version, ib.staged)

		n := ib.v.node
		n.sim.mu.Lock()
		saved := n.ps.config
		n.sim.mu.Unlock()

		if !bytes.Equal(saved, cfg) {
			t.Errorf("after the install, the node's saved configuration is not the one applied in the install boot")
		}
	})

	t.Run("shutdown", func(t *testing.T) {
		t.Parallel()

		ib := holdInInstallBoot(t, version)
		n := ib.v.node
		b := n.eventsOf()

		resp, err := ib.cl.MachineClient.Shutdown(ib.ctx, &machine.ShutdownRequest{})
		if err != nil || resp.GetMessages()[0].GetActorId() == "" {
			t.Fatalf("Shutdown in the install boot = %v, %v; want it accepted with an actor ID", resp, err)
		}

		select {
		case <-n.Done():
		case <-ib.ctx.Done():
			t.Fatalf("the node did not power off: %+v", n.Status())
		}

		if !installCancelled(b) {
			t.Error("no CANCELED event of the install sequence")
		}

		ib.v.start(ib.tc.sim)
		ib.runs(t, version, qgaID)
	})
}

// Talos 1.13 still has apply mode REBOOT, whose reboot takes machined's
// lock over (v1.13.0 v1alpha1_server.go ApplyConfiguration: Run with
// WithTakeover): in the boot that installs a staged upgrade it saves the
// configuration, cancels the install and reboots; the staged upgrade was
// dropped, so the node boots its installed image with that configuration.
// Before, the lab refused the call ("node is not running").
func TestInstallBootRebootApplyCancelsTheInstallOnTalos113(t *testing.T) {
	t.Parallel()

	const version = "v1.13.9"

	ib := holdInInstallBoot(t, version)
	n := ib.v.node
	b := n.eventsOf()
	boots := n.Status().Boots
	cfg := append(bytes.Clone(ib.tc.cpConfig), "\n# applied in the install boot\n"...)

	resp, err := ib.cl.ApplyConfiguration(ib.ctx, &machine.ApplyConfigurationRequest{Data: cfg, Mode: machine.ApplyConfigurationRequest_REBOOT})
	if err != nil || resp.GetMessages()[0].GetMode() != machine.ApplyConfigurationRequest_REBOOT {
		t.Fatalf("ApplyConfiguration REBOOT in the install boot = %v, %v", resp, err)
	}

	waitFor(t, "a new boot", func() bool { return n.Status().Boots > boots })

	if !installCancelled(b) {
		t.Error("no CANCELED event of the install sequence")
	}

	ib.runs(t, version, qgaID)

	n.sim.mu.Lock()
	saved, staged := n.ps.config, n.ps.stagedUpgrade
	n.sim.mu.Unlock()

	if !bytes.Equal(saved, cfg) || staged != nil {
		t.Errorf("after the reboot: configuration applied in the install boot saved %v, staged upgrade %v (want dropped)", bytes.Equal(saved, cfg), staged)
	}
}

// installCancelled reports whether b holds the install sequence's CANCELED
// error, without an actor.
func installCancelled(b *eventBuffer) bool {
	b.mu.Lock()
	defer b.mu.Unlock()

	for _, ev := range b.events {
		var se machine.SequenceEvent
		if strings.HasSuffix(ev.GetData().GetTypeUrl(), "/machine.SequenceEvent") && proto.Unmarshal(ev.GetData().GetValue(), &se) == nil && se.GetSequence() == "install" &&
			se.GetError().GetCode() == common.Code_CANCELED && ev.GetActorId() == "" {
			return true
		}
	}

	return false
}
