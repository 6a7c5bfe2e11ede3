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

// rebootIfAsked reboots the node when sendApply said so (rebootAfter), and
// follows the reboot's events until ctx ends (nil when no reboot was sent).
func rebootIfAsked(ctx context.Context, t Target, res *ApplyResult, rebootAfter bool, before string, o Options) (*sequenceWatch, error) {
	if !rebootAfter {
		return nil, nil
	}

	sent, err := rebootAfterApply(ctx, t, before, o)
	if err != nil {
		return nil, err
	}

	res.Details += "; rebooted through the Reboot API (this Talos has no apply mode reboot)"

	return watchSequence(ctx, t, sent.actor, sent.mark, []string{"reboot"}, o), nil
}

// rebootSent is the Reboot call a node answered: its actor ID and the
// event mark read before it (both "" when an earlier attempt's reboot,
// whose answer was lost, already ran).
type rebootSent struct{ actor, mark string }

// rebootAfterApply reboots a node that applied a configuration without a
// reboot for applyMode reboot, through the Reboot API (which drains the
// node first, as an upgrade does). before is the boot ID read before the
// apply: a node that already answers from another boot was rebooted by an
// attempt whose answer was lost, and is not rebooted twice.
//
// machined answers the call before its reboot sequence takes the lock, and
// asks no takeover (v1alpha1_server.go Reboot, v1.12.9 to v1.14.0-rc.1):
// while an upgrade, a staged upgrade's install or a shutdown runs, the
// reboot is accepted and never started ("sequence not started: locked",
// runtime/sequencer.go sequenceTakeOver), which the wait learns from the
// events after the mark.
func rebootAfterApply(ctx context.Context, t Target, before string, o Options) (rebootSent, error) {
	o = o.withDefaults()

	var sent rebootSent

	err := o.poll(ctx, fmt.Sprintf("node %s to accept the reboot (applyMode reboot)", t.Node), func(ctx context.Context) (bool, string, error) {
		conn, state, err := dialOnce(ctx, o, t)
		if err != nil {
			return false, state, err
		}
		defer conn.Close() //nolint:errcheck

		// Each read before the call, and the call, have an attempt of
		// their own.
		bctx, bcancel := o.attemptContext(ctx)
		rebooted, err := bootChanged(bctx, conn, t, before, "to run the configuration")

		bcancel()

		if err != nil || rebooted {
			sent = rebootSent{}

			return rebooted, state, err
		}

		sent.mark = readBefore(ctx, o, func(actx context.Context) string { return eventMark(actx, conn) })

		actx, cancel := o.attemptContext(ctx)
		defer cancel()

		resp, err := conn.client.RebootWithResponse(conn.nodeContext(actx))
		if err != nil {
			if classify(err) == failPermanent {
				return false, "", stop(fmt.Errorf("node %s saved the machine configuration but refused the reboot applyMode reboot asks for (%s): "+
					"reboot it with `talosctl -n %s reboot`, or run `pulumi up` again", t.Node, statusMessage(err), t.Node))
			}

			return false, state, err
		}

		if msgs := resp.GetMessages(); len(msgs) > 0 {
			sent.actor = msgs[0].GetActorId()
		}

		o.machineSilent(t, rebootSilence)

		return true, state, nil
	})

	return sent, err
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
