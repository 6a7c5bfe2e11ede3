package talosapi

import (
	"context"
	"fmt"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	runtimeres "github.com/siderolabs/talos/pkg/machinery/resources/runtime"
)

// ResetRequest wipes a node.
type ResetRequest struct {
	// Graceful cordons and drains the node and, on a control plane, leaves
	// etcd before wiping, so the cluster keeps quorum and loses no member
	// silently (talosctl reset --graceful, the default).
	Graceful bool
	// Reboot reboots the node afterwards (back into maintenance mode when it
	// boots from the ISO); otherwise it powers off.
	Reboot bool
}

// Reset wipes a configured node's system disk (talosctl reset defaults) and
// waits until the node stops answering with the cluster's credentials:
// powered off, rebooting, or back in maintenance mode. A node already in
// maintenance mode is left alone.
func Reset(ctx context.Context, t Target, req ResetRequest, o Options) error {
	o = o.withDefaults()

	conn, err := Connect(ctx, t, o)
	if err != nil {
		return err
	}

	if conn.Mode == ModeMaintenance {
		conn.Close() //nolint:errcheck
		o.report("node %s is in maintenance mode already: nothing to reset", t.Node)

		return nil
	}

	actx, cancel := o.attemptContext(ctx)
	_, err = conn.client.ResetGenericWithResponse(conn.nodeContext(actx), &machineapi.ResetRequest{Graceful: req.Graceful, Reboot: req.Reboot})

	cancel()
	conn.Close() //nolint:errcheck

	if err != nil {
		return fmt.Errorf("node %s refused the reset (graceful=%v): %s", t.Node, req.Graceful, statusMessage(err))
	}

	o.report("node %s accepted the reset (graceful=%v, reboot=%v)", t.Node, req.Graceful, req.Reboot)

	seenResetting := false

	return o.poll(ctx, fmt.Sprintf("node %s to finish its reset", t.Node), func(ctx context.Context) (bool, string, error) {
		conn, state, err := dialOnce(ctx, o, t)
		if err != nil {
			if classify(err) == failTransient {
				// It no longer answers: powered off or rebooting.
				return true, "not answering", nil
			}

			return false, state, err
		}
		defer conn.Close() //nolint:errcheck

		if conn.Mode == ModeMaintenance {
			return true, "maintenance mode", nil
		}

		actx, cancel := o.attemptContext(ctx)
		defer cancel()

		stage, ok := readStage(actx, conn)
		switch {
		case !ok:
			return false, "still configured", nil
		case stage == runtimeres.MachineStageResetting || stage == runtimeres.MachineStageShuttingDown || stage == runtimeres.MachineStageRebooting:
			seenResetting = true
		case seenResetting && stage == runtimeres.MachineStageRunning:
			return false, "", stop(fmt.Errorf("node %s started resetting but is running again: the reset failed on the node (for a control plane, leaving etcd may have been refused to keep quorum); see its logs with talosctl dmesg", t.Node))
		}

		return false, "stage " + stage.String(), nil
	})
}
