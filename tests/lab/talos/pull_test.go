package talos

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	mtype "github.com/siderolabs/talos/pkg/machinery/config/machine"
)

// An installer image that cannot be pulled (the factory does not have its
// schematic) fails the install: nothing is written, the node comes back in
// maintenance mode.
func TestInstallerPullFailureNeverConfigures(t *testing.T) {
	t.Parallel()

	s, logs := newSimWith(t, Options{Pull: func(ref string) error {
		return errors.New("failed to resolve reference \"" + ref + "\": not found")
	}})
	v := newVM("cp1", addressBlock()(11), "scsi0")
	n := v.start(s)

	waitPhase(t, n, PhaseMaintenance)

	cfg := configBytes(t, clusterInput(t, v.addr()), mtype.TypeControlPlane, func(s string) string { return s })
	if _, err := maintenanceClient(t, v.addr()).ApplyConfiguration(ctxT(t), &machine.ApplyConfigurationRequest{Data: cfg, Mode: machine.ApplyConfigurationRequest_AUTO}); err != nil {
		t.Fatal(err)
	}

	waitFor(t, "pull failure in the log", func() bool {
		return strings.Contains(logs.String(), "error pulling installer image") && strings.Contains(logs.String(), "not found")
	})
	waitPhase(t, n, PhaseMaintenance)

	if v.host.content("scsi0") != "" || n.Status().Configured {
		t.Fatal("a failed pull must not install")
	}
}

// An upgrade whose installer cannot be pulled fails in the Upgrade call
// (v1.12.5 pulls it there) and leaves the node as it was; with the image
// available it upgrades.
func TestUpgradePullFailureKeepsVersion(t *testing.T) {
	t.Parallel()

	var refuse atomic.Bool

	tc := bootCluster(t, clusterOpts{cps: 1, pull: func(ref string) error {
		if refuse.Load() && strings.HasSuffix(ref, ":v1.12.6") {
			return errors.New("failed to resolve reference \"" + ref + "\": not found")
		}

		return nil
	}})
	tc.bootstrap(t)

	v := tc.cps[0]
	c := tc.client(t, v)
	refuse.Store(true)
	boots := v.node.Status().Boots

	for _, stage := range []bool{false, true} {
		_, err := c.MachineClient.Upgrade(ctxT(t), &machine.UpgradeRequest{Image: installerNext, Stage: stage})
		mustContain(t, err, `error validating installer image "`+installerNext+`": failed to resolve reference`)
	}

	if st := v.node.Status(); st.Boots != boots || st.Phase != PhaseRunning || st.Image.Version != "v1.12.5" {
		t.Fatalf("a refused Upgrade call must leave the node alone: %+v", st)
	}

	refuse.Store(false)

	if _, err := c.MachineClient.Upgrade(ctxT(t), &machine.UpgradeRequest{Image: installerNext}); err != nil {
		t.Fatal(err)
	}

	waitFor(t, "upgraded", func() bool { st := v.node.Status(); return st.Phase == PhaseRunning && st.Image.Version == "v1.12.6" })
}
