package talos

import (
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"
)

// The boot that installs a staged upgrade answers the Talos API from Talos
// 1.13 on (apid starts before the install sequence: siderolabs/talos
// b7d70cf62; v1.14.0-rc.1 v1alpha1_sequencer.go Initialize) with the
// version it boots, a new boot ID and stage installing, and refuses a
// reboot while it installs; on 1.12 (apid starts after the install
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

				err = cl.Reboot(ctx)
				wantCode(t, err, codes.Unavailable, "node is not running")
			}

			release()

			waitFor(t, "the node running "+c.to, func() bool {
				st := n.Status()

				return st.Phase == PhaseRunning && st.Image.Version == c.to && st.Image.Schematic == schematic
			})
		})
	}
}
