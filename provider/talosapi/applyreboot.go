package talosapi

import (
	"context"
	"fmt"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"google.golang.org/grpc/codes"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// rebootModeDropped reports whether a configured node refused apply mode
// reboot as Talos 1.14 does: "feat: drop apply config method reboot"
// (siderolabs/talos 995bc30d5, v1.14.0-alpha.2; v1.14.0-rc.1 7a84d742b
// v1alpha1_server.go ApplyConfiguration) answers Unimplemented ("the REBOOT
// mode is not supported, please use AUTO or NO_REBOOT modes instead") and
// recommends an apply followed by a reboot, which the caller then does.
func rebootModeDropped(err error, conn *Conn, mode ApplyMode) bool {
	return err != nil && mode == ApplyReboot && conn.Mode == ModeSecure && client.StatusCode(err) == codes.Unimplemented
}

// sendApply sends the configuration; a node that has no mode reboot gets it
// without a reboot, and rebootAfter says the caller reboots it.
func sendApply(ctx context.Context, conn *Conn, areq *machineapi.ApplyConfigurationRequest, mode ApplyMode, o Options) (
	resp *machineapi.ApplyConfigurationResponse, rebootAfter bool, err error) {
	resp, err = conn.client.ApplyConfiguration(conn.nodeContext(ctx), areq)
	if !rebootModeDropped(err, conn, mode) {
		return resp, false, err
	}

	o.report("node %s (Talos %s) has no apply mode reboot: applying the configuration without a reboot, then rebooting the node", conn.target.Node, conn.version)

	areq.Mode = machineapi.ApplyConfigurationRequest_NO_REBOOT
	resp, err = conn.client.ApplyConfiguration(conn.nodeContext(ctx), areq)

	return resp, err == nil, err
}

// rebootIfAsked reboots the node when sendApply said so (rebootAfter).
func rebootIfAsked(ctx context.Context, t Target, res *ApplyResult, rebootAfter bool, before string, o Options) error {
	if !rebootAfter {
		return nil
	}

	if err := rebootAfterApply(ctx, t, before, o); err != nil {
		return err
	}

	res.Details += "; rebooted through the Reboot API (this Talos has no apply mode reboot)"

	return nil
}

// rebootAfterApply reboots a node that applied a configuration without a
// reboot for applyMode reboot, through the Reboot API (which drains the
// node first, as an upgrade does). before is the boot ID read before the
// apply: a node that already answers from another boot was rebooted by an
// attempt whose answer was lost, and is not rebooted twice.
func rebootAfterApply(ctx context.Context, t Target, before string, o Options) error {
	o = o.withDefaults()

	return o.poll(ctx, fmt.Sprintf("node %s to accept the reboot (applyMode reboot)", t.Node), func(ctx context.Context) (bool, string, error) {
		conn, state, err := dialOnce(ctx, o, t)
		if err != nil {
			return false, state, err
		}
		defer conn.Close() //nolint:errcheck

		actx, cancel := o.attemptContext(ctx)
		defer cancel()

		rebooted, err := bootChanged(actx, conn, t, before, "to run the configuration")
		if err != nil || rebooted {
			return rebooted, state, err
		}

		if err := conn.client.Reboot(conn.nodeContext(actx)); err != nil {
			if classify(err) == failPermanent {
				return false, "", stop(fmt.Errorf("node %s saved the machine configuration but refused the reboot applyMode reboot asks for (%s): "+
					"reboot it with `talosctl -n %s reboot`, or run `pulumi up` again", t.Node, statusMessage(err), t.Node))
			}

			return false, state, err
		}

		o.machineSilent(t, rebootSilence)

		return true, state, nil
	})
}

// pendingPaths lists the paths of a change a configured node applied
// without a reboot although it needed one before Talos 1.14 (which no
// longer checks: talosconfig.AppliesWithoutReboot): they take effect at its
// next reboot, and Talos reports nothing pending, so Talos' former rule
// (ClassifyChange) names them. nil when req has no Running configuration.
//
// Mode try counts too: 1.14 accepts such a change in TRY (older versions
// refused it) and makes it the active configuration only, unsaved, until
// the rollback (v1.14.0-rc.1 v1alpha1_server.go ApplyConfiguration, TRY:
// RollbackToConfigAfter, SetConfig, no SetPersistedConfig), so those paths
// never take effect: a reboot boots the saved configuration.
func pendingPaths(req ApplyRequest, res *ApplyResult) []string {
	applied := res.Applied == ApplyNoReboot || res.Applied == ApplyTry
	if len(req.Running) == 0 || res.Via != ModeSecure || !applied || !talosconfig.AppliesWithoutReboot(res.Version) {
		return nil
	}

	ch, err := talosconfig.ClassifyChange(string(req.Running), string(req.Config))
	if err != nil || !ch.Reboot {
		return nil
	}

	return ch.RebootPaths
}
