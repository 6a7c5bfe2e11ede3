package talos

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/siderolabs/talos/pkg/machinery/api/common"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"
)

// The boot that installs a staged upgrade answers the Talos API from Talos
// 1.13 on (apid starts before the install sequence: siderolabs/talos
// b7d70cf62; v1.14.0-rc.1 v1alpha1_sequencer.go Initialize) with the
// version it boots, a new boot ID and stage installing, and accepts a
// reboot, a reset and an upgrade there without starting them (LOCKED); on 1.12 (apid starts after the install
// sequence, v1.12.0 machined main.go) it answers nothing. Before, the lab's
// install boot answered nothing on every version.
func TestStagedInstallBootAnswersFromTalos113(t *testing.T) {
	t.Parallel()

	for _, c := range []struct {
		boot, to string
		answers  bool
	}{
		{"v1.12.5", "v1.12.6", false},
		{"v1.13.9", "v1.14.1", true},
		{"v1.14.1", "v1.14.1", true}, // another schematic, same version
	} {
		t.Run(c.boot+"-to-"+c.to, func(t *testing.T) {
			t.Parallel()

			image := strings.ReplaceAll(installer, testVersion, c.boot)
			tc := bootCluster(t, clusterOpts{cps: 1, version: c.boot, patch: func(s string) string { return strings.ReplaceAll(s, installer, image) }})
			v := tc.cps[0]
			n := v.node
			cl := tc.client(t, v)
			ctx := ctxT(t)

			waitFor(t, "apid", func() bool { _, err := cl.Version(ctx); return err == nil })

			before, err := readBootID(ctx, t, cl)
			if err != nil {
				t.Fatal(err)
			}

			schematic := tc.sim.Catalog().Register("siderolabs/qemu-guest-agent", "siderolabs/iscsi-tools")
			if c.to != c.boot {
				schematic = qgaID
			}

			next := "factory.talos.dev/nocloud-installer/" + schematic + ":" + c.to

			gate := make(chan struct{})
			release := sync.OnceFunc(func() { close(gate) })
			t.Cleanup(release)
			tc.sim.SetFaults(Faults{StagedInstallGate: gate})

			// Force: no etcd is bootstrapped on this node.
			if _, err := cl.MachineClient.Upgrade(ctx, &machine.UpgradeRequest{Image: next, Stage: true, Force: true}); err != nil {
				t.Fatal(err)
			}

			waitPhase(t, n, PhaseInstalling)

			if !c.answers {
				if _, err := cl.Version(ctx); status.Code(err) != codes.Unavailable {
					t.Fatalf("Talos %s answered Version while it installs the staged upgrade (%v): its apid starts after the install", c.boot, err)
				}
			} else {
				var ver *machine.VersionResponse

				waitFor(t, "apid in the install boot", func() bool { ver, err = cl.Version(ctx); return err == nil })

				if got := ver.Messages[0].Version.Tag; got != c.boot {
					t.Errorf("Version in the install boot = %s, want the version it boots, %s", got, c.boot)
				}

				if id, err := readBootID(ctx, t, cl); err != nil || id == before {
					t.Errorf("boot ID in the install boot = %q, %v; want a new one (before: %q)", id, err, before)
				}

				if st := machineStatus(t, cl).TypedSpec().Stage; st != runtime.MachineStageInstalling {
					t.Errorf("stage in the install boot = %s, want installing", st)
				}

				lifecycleCallsAreLocked(ctx, t, cl, n, c.to)
			}

			release()

			waitFor(t, "the node running "+c.to, func() bool {
				st := n.Status()

				return st.Phase == PhaseRunning && st.Image.Version == c.to && st.Image.Schematic == schematic
			})
		})
	}
}

// lifecycleCallsAreLocked asks the node in its install boot for a reboot, a
// reset and an upgrade: machined accepts each (an actor ID) and publishes
// "sequence not started: locked" without an actor, since the install
// sequence holds its lock (installLocked), and the install goes on. Before,
// the lab refused them with "node is not running", which Talos 1.13+ does
// not.
func lifecycleCallsAreLocked(ctx context.Context, t *testing.T, cl *client.Client, n *Node, to string) {
	t.Helper()

	reboot, err := cl.MachineClient.Reboot(ctx, &machine.RebootRequest{})
	if err != nil || reboot.GetMessages()[0].GetActorId() == "" {
		t.Fatalf("Reboot in the install boot = %v, %v; want it accepted with an actor ID", reboot, err)
	}

	reset, err := cl.MachineClient.Reset(ctx, &machine.ResetRequest{Graceful: true})
	if err != nil || reset.GetMessages()[0].GetActorId() == "" {
		t.Fatalf("Reset in the install boot = %v, %v; want it accepted with an actor ID", reset, err)
	}

	upgrade, err := cl.MachineClient.Upgrade(ctx, &machine.UpgradeRequest{Image: strings.ReplaceAll(installer, testVersion, to), Force: true})
	if err != nil || upgrade.GetMessages()[0].GetActorId() == "" {
		t.Fatalf("Upgrade in the install boot = %v, %v; want it accepted with an actor ID", upgrade, err)
	}

	b := n.eventsOf()
	b.mu.Lock()
	events := append([]*machine.Event(nil), b.events...)
	b.mu.Unlock()

	var locked []string

	for _, ev := range events {
		var se machine.SequenceEvent
		if strings.HasSuffix(ev.GetData().GetTypeUrl(), "/machine.SequenceEvent") && proto.Unmarshal(ev.GetData().GetValue(), &se) == nil {
			if ev.GetActorId() != "" {
				t.Errorf("install boot: event of actor %s (%v): a sequence started", ev.GetActorId(), &se)
			}

			if se.GetError().GetCode() == common.Code_LOCKED && se.GetError().GetMessage() == "sequence not started: locked" {
				locked = append(locked, se.GetSequence())
			}
		}
	}

	if want := []string{"reboot", "reset", "upgrade"}; !slices.Equal(locked, want) {
		t.Errorf("install boot: LOCKED events for %v, want %v", locked, want)
	}

	if p := n.Status().Phase; p != PhaseInstalling {
		t.Errorf("install boot: phase %s after the calls, want installing", p)
	}
}
