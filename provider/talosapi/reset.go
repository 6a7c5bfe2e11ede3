package talosapi

import (
	"context"
	"fmt"
	"slices"
	"time"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	runtimeres "github.com/siderolabs/talos/pkg/machinery/resources/runtime"

	"github.com/proxmoxtalos/proxmoxtalos/provider/killpoint"
)

// ResetRequest wipes a node.
type ResetRequest struct {
	// Graceful cordons and drains the node and, on a control plane, leaves
	// etcd before wiping, so the cluster keeps quorum and loses no member
	// silently (talosctl reset --graceful, the default). The cluster's last
	// etcd member cannot leave: it is reset without leaving, and Progress
	// says so.
	Graceful bool
	// Reboot reboots the node afterwards (back into maintenance mode when it
	// boots from the ISO); otherwise it powers off.
	Reboot bool
	// ProbeMembers, for a graceful reset of a control plane, is how long
	// each other etcd member's node is given to answer: etcd refuses the
	// leave while the members left running would not be a majority, so
	// members whose nodes do not answer are removed first, as many as the
	// leave needs (ResetResult.Removed). Zero leaves them alone.
	ProbeMembers time.Duration
}

// ResetResult says what a reset did besides resetting the node.
type ResetResult struct {
	// Removed are the etcd members removed so that the node could leave.
	Removed []DownMember
}

// Reset wipes a configured node's system disk (talosctl reset defaults).
// Without reboot it waits until the node stops serving (it has left etcd
// and stopped its services; the wipe and power-off follow on the node); with
// reboot, until the node answers in maintenance mode. A node already in
// maintenance mode is left alone.
func Reset(ctx context.Context, t Target, req ResetRequest, o Options) (ResetResult, error) {
	o = o.withDefaults()

	var res ResetResult

	conn, err := Connect(ctx, t, o)
	if err != nil {
		return res, err
	}

	if conn.Mode == ModeMaintenance {
		conn.Close() //nolint:errcheck
		o.report("node %s is in maintenance mode already: nothing to reset", t.Node)

		return res, nil
	}

	if req.Graceful && lastEtcdMember(ctx, o, conn, t) {
		// Destroying a whole cluster ends with its last control plane:
		// leaving etcd would fail on the node after the request was
		// accepted, so it is reset as talosctl reset --graceful=false does.
		o.report("node %s is the last etcd member of its cluster, which etcd cannot remove: resetting it without "+
			"leaving etcd (graceful=false); the cluster's etcd data goes with it", t.Node)

		req.Graceful = false
	}

	if req.Graceful && req.ProbeMembers > 0 && isEtcdMember(ctx, o, conn) {
		if res.Removed, err = clearDownMembers(ctx, o, conn, t, req.ProbeMembers); err != nil {
			conn.Close() //nolint:errcheck

			return res, fmt.Errorf("node %s cannot leave etcd while other members are down: %w", t.Node, err)
		}
	}

	// Each read before the request has an attempt of its own, so that a
	// slow one leaves the reset call its whole attempt.
	before := readBefore(ctx, o, func(actx context.Context) string {
		id, _ := readBootID(actx, conn) // "" when not read: then the stage alone tells

		return id
	})
	mark := readBefore(ctx, o, func(actx context.Context) string { return eventMark(actx, conn) })

	actx, cancel := o.attemptContext(ctx)
	resp, err := conn.client.ResetGenericWithResponse(conn.nodeContext(actx), &machineapi.ResetRequest{Graceful: req.Graceful, Reboot: req.Reboot})

	cancel()
	conn.Close() //nolint:errcheck

	if err != nil {
		return res, fmt.Errorf("node %s refused the reset (graceful=%v): %s", t.Node, req.Graceful, statusMessage(err))
	}

	o.report("node %s accepted the reset (graceful=%v, reboot=%v)", t.Node, req.Graceful, req.Reboot)
	killpoint.Reach("after-reset-accepted")

	wctx, wcancel := o.boundedContext(ctx)
	defer wcancel()

	var actor string
	if msgs := resp.GetMessages(); len(msgs) > 0 {
		actor = msgs[0].GetActorId()
	}

	return res, waitReset(wctx, t, req, before, watchSequence(wctx, t, actor, mark, []string{"reset"}, o), o)
}

// readBefore runs read under an attempt context of its own.
func readBefore(ctx context.Context, o Options, read func(context.Context) string) string {
	actx, cancel := o.attemptContext(ctx)
	defer cancel()

	return read(actx)
}

// waitReset waits until a node that accepted a reset is done with it. It
// judges a failure from facts only, never from time: the node reported the
// sequence's error (w), or it runs (stage running, configured) after it was
// seen resetting, or from another boot than before. A node that runs its
// old boot in stage running has not started yet, however long that takes
// under load: the context's deadline ends that wait.
func waitReset(ctx context.Context, t Target, req ResetRequest, before string, w *sequenceWatch, o Options) error {
	seenResetting := false

	return o.poll(ctx, fmt.Sprintf("node %s to finish its reset", t.Node), func(ctx context.Context) (bool, string, error) {
		if err := w.ended(t.Node, "reset", func(node, _, msg string) error { return resetFailed(node, msg) }); err != nil {
			return false, "", stop(err)
		}

		conn, state, err := dialOnce(ctx, o, t)
		if err != nil {
			if classify(err) == failTransient && !req.Reboot {
				// It no longer serves: it has left etcd and stopped its
				// services; wiping and powering off go on without us.
				return true, "not answering", nil
			}

			if classify(err) == failTransient {
				return false, "rebooting (waiting for maintenance mode; a VM without the Talos ISO has nothing to boot after the wipe)", nil
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
		case stage == runtimeres.MachineStageRunning && seenResetting:
			// Talos enters the resetting stage as soon as the sequence
			// starts; running again means it failed.
			return false, "", stop(resetFailed(t.Node, w.failure()))
		case stage == runtimeres.MachineStageRunning && before != "":
			if id, err := readBootID(actx, conn); err == nil && id != before {
				// A wiped node boots into maintenance mode (or
				// nothing): configured on a new boot, it was not wiped.
				return false, "", stop(resetFailed(t.Node, w.failure()))
			}
		}

		return false, "stage " + stage.String(), nil
	})
}

// resetFailed says that a node's reset failed, with the node's own message
// when it sent one.
func resetFailed(node, msg string) error {
	said := ""
	if msg != "" {
		said = " (the node said: " + msg + ")"
	}

	return fmt.Errorf("node %s accepted the reset but is running again: the reset failed on the node%s; for a control plane, "+
		"leaving etcd may have been refused to keep quorum. See its logs with `talosctl -n %s dmesg`, fix the cause and run `pulumi up` again",
		node, said, node)
}

// isEtcdMember reports whether the node runs an etcd member (workers and
// control planes without etcd answer the local member list with an error).
func isEtcdMember(ctx context.Context, o Options, conn *Conn) bool {
	actx, cancel := o.attemptContext(ctx)
	defer cancel()

	_, err := conn.client.EtcdMemberList(conn.nodeContext(actx), &machineapi.EtcdMemberListRequest{QueryLocal: true})

	return err == nil
}

// lastEtcdMember reports whether the node is its cluster's only etcd member:
// a graceful reset would try to leave etcd, etcd refuses to remove its last
// member, and the reset fails on the node after the request was accepted.
func lastEtcdMember(ctx context.Context, o Options, conn *Conn, t Target) bool {
	actx, cancel := o.attemptContext(ctx)
	defer cancel()

	resp, err := conn.client.EtcdMemberList(conn.nodeContext(actx), &machineapi.EtcdMemberListRequest{QueryLocal: true})
	if err != nil {
		// Workers and control planes without etcd answer with an error:
		// nothing to leave.
		return false
	}

	var members []*machineapi.EtcdMember
	for _, m := range resp.GetMessages() {
		members = append(members, m.GetMembers()...)
	}

	host := t.nodeHost()

	return len(members) == 1 && slices.Contains(peerHosts(members[0].GetPeerUrls()), host)
}
