package talosapi

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/common"
	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"google.golang.org/protobuf/proto"
)

// sequenceWatch follows a node's events while the wait for one request runs
// and filters them on the client, as talosctl's action tracker does
// (siderolabs/talos cmd/talosctl/pkg/talos/action/node.go handleEvents):
//
//   - a sequence event with an error for the request's actor fails it:
//     machined publishes "sequence failed: ..." for the actor when the
//     sequence's run ends in an error (v1alpha1_controller.go Run);
//   - a NOOP sequence event with code LOCKED for the request's sequence,
//     before any event of the actor, says the sequence never started:
//     machined runs one sequence at a time, and Run publishes "sequence not
//     started: locked" with context.Background(), so with no actor ID
//     (v1alpha1_controller.go Run, v1.12.9 and v1.14.0-rc.1; Events.Publish
//     takes the actor from the context, v1alpha1_events.go). A server-side
//     actor filter (WithActorID) drops it, so the stream is not filtered.
//
// Events after mark (the ID read by eventMark before the request) are the
// request's; without a mark, the actor's events alone are trusted. The events
// live in the boot's memory: a node that rebooted since has none to replay.
type sequenceWatch struct {
	mu      sync.Mutex
	failed  string // the node's message, once seen
	locked  bool   // failed is machined's LOCKED: the sequence never started
	started bool   // an event of the actor was seen: the sequence runs
}

// eventMark is the ID of the hello event an events stream starts with
// (machined's Events sends a new event first, sendEmptyEvent: its xid is
// taken now, and xids of one machined sort by time), read before a request
// so that a watch replays only what followed it (tail_id). "" when not read.
func eventMark(ctx context.Context, conn *Conn) string {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	stream, err := conn.client.Events(conn.nodeContext(ctx))
	if err != nil {
		return ""
	}

	ev, err := stream.Recv()
	if err != nil {
		return ""
	}

	return ev.GetId()
}

// watchSequence follows the node's events for the request answered with
// actor, whose sequence is one of seqs (machined's names: "reset",
// "upgrade", "stageUpgrade", "reboot"), until ctx ends.
func watchSequence(ctx context.Context, t Target, actor, mark string, seqs []string, o Options) *sequenceWatch {
	w := &sequenceWatch{}

	if actor == "" && mark == "" {
		return w
	}

	go func() {
		for ctx.Err() == nil && w.failure() == "" {
			w.follow(ctx, t, actor, mark, seqs, o)

			select {
			case <-ctx.Done():
			case <-time.After(o.PollMax):
			}
		}
	}()

	return w
}

// follow reads one events stream (after mark, or the boot's first event kept)
// until it ends or settles the request.
func (w *sequenceWatch) follow(ctx context.Context, t Target, actor, mark string, seqs []string, o Options) {
	conn, _, err := dialNode(ctx, o, t)
	if err != nil {
		return
	}
	defer conn.Close() //nolint:errcheck

	if conn.Mode == ModeMaintenance {
		return
	}

	from := client.WithTailEvents(-1)
	if mark != "" {
		from = client.WithTailID(mark)
	}

	stream, err := conn.client.Events(conn.nodeContext(ctx), from)
	if err != nil {
		return
	}

	for {
		ev, err := stream.Recv()
		if err != nil {
			return
		}

		if w.see(ev, actor, mark != "", seqs) {
			return
		}
	}
}

// see takes one event into account and reports whether the request is
// settled (failed or locked).
func (w *sequenceWatch) see(ev *machineapi.Event, actor string, afterMark bool, seqs []string) bool {
	se := sequenceEvent(ev)

	w.mu.Lock()
	defer w.mu.Unlock()

	switch {
	case actor != "" && ev.GetActorId() == actor:
		w.started = true

		if msg := se.GetError().GetMessage(); msg != "" {
			w.failed = msg
		}
	case afterMark && !w.started && se.GetError().GetCode() == common.Code_LOCKED && slices.Contains(seqs, se.GetSequence()):
		w.failed, w.locked = se.GetError().GetMessage(), true
		if w.failed == "" {
			w.failed = "sequence not started: locked"
		}
	}

	return w.failed != ""
}

// failure is the error the node reported for the sequence ("" while none).
func (w *sequenceWatch) failure() string {
	msg, _ := w.outcome()

	return msg
}

// ended is the error for a request (what: "reset", "upgrade to Talos
// v1.14.1", "reboot") whose events settled it: its sequence never started
// (sequenceLocked), or failed on the node (failed quotes the node's
// message). nil while neither was seen.
func (w *sequenceWatch) ended(node, what string, failed func(node, what, msg string) error) error {
	msg, locked := w.outcome()

	switch {
	case locked:
		return sequenceLocked(node, what, msg)
	case msg != "":
		return failed(node, what, msg)
	}

	return nil
}

// outcome is the node's message and whether it is machined's LOCKED. A nil
// watch has seen nothing.
func (w *sequenceWatch) outcome() (msg string, locked bool) {
	if w == nil {
		return "", false
	}

	w.mu.Lock()
	defer w.mu.Unlock()

	return w.failed, w.locked
}

// sequenceEvent is ev's SequenceEvent (nil for any other event).
func sequenceEvent(ev *machineapi.Event) *machineapi.SequenceEvent {
	if !strings.HasSuffix(ev.GetData().GetTypeUrl(), "/machine.SequenceEvent") {
		return nil
	}

	var se machineapi.SequenceEvent
	if proto.Unmarshal(ev.GetData().GetValue(), &se) != nil {
		return nil
	}

	return &se
}

// sequenceLocked says that a node accepted a request (what: "reset",
// "upgrade to v1.14.0") but never started it because it ran another
// sequence, and what to do.
func sequenceLocked(node, what, msg string) error {
	return fmt.Errorf("node %s accepted the %s but did not start it: it was busy with another operation (a boot, reboot, "+
		"upgrade or reset still running; the node said: %s). Run `pulumi up` again once the node is idle "+
		"(`talosctl -n %s dmesg` shows what it runs)", node, what, msg, node)
}

// sequenceFailed says that the node's sequence for a request (what) failed,
// quoting the node, and what to do.
func sequenceFailed(node, what, msg string) error {
	return fmt.Errorf("node %s accepted the %s but it failed on the node (the node said: %s). See its logs with "+
		"`talosctl -n %s dmesg`, fix the cause and run `pulumi up` again", node, what, msg, node)
}
