package talosapi

import (
	"context"
	"strings"
	"sync"
	"time"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"google.golang.org/protobuf/proto"
)

// sequenceWatch follows one request's events on a node (its actor ID) while
// a wait runs, as talosctl's action tracker does: a sequence event with an
// error for the actor fails the action (siderolabs/talos
// cmd/talosctl/pkg/talos/action/node.go handleEvents). machined publishes
// "sequence failed: ..." for the actor when the sequence's run ends in an
// error (v1alpha1_controller.go Run, v1.12.5). The events live in the
// boot's memory: a node that rebooted since has none to replay.
type sequenceWatch struct {
	mu     sync.Mutex
	failed string // the node's message, once seen
}

// watchSequence starts following actor's events on the node until ctx ends.
func watchSequence(ctx context.Context, t Target, actor string, o Options) *sequenceWatch {
	w := &sequenceWatch{}

	if actor == "" {
		return w
	}

	go func() {
		for ctx.Err() == nil && w.failure() == "" {
			w.follow(ctx, t, actor, o)

			select {
			case <-ctx.Done():
			case <-time.After(o.PollMax):
			}
		}
	}()

	return w
}

// follow reads one events stream from its start (the boot's first event
// kept) until it ends or shows the sequence's error.
func (w *sequenceWatch) follow(ctx context.Context, t Target, actor string, o Options) {
	conn, _, err := dialNode(ctx, o, t)
	if err != nil {
		return
	}
	defer conn.Close() //nolint:errcheck

	if conn.Mode == ModeMaintenance {
		return
	}

	stream, err := conn.client.Events(conn.nodeContext(ctx), client.WithTailEvents(-1), client.WithActorID(actor))
	if err != nil {
		return
	}

	for {
		ev, err := stream.Recv()
		if err != nil {
			return
		}

		if msg := sequenceError(ev, actor); msg != "" {
			w.mu.Lock()
			w.failed = msg
			w.mu.Unlock()

			return
		}
	}
}

// failure is the error the node reported for the sequence ("" while none).
func (w *sequenceWatch) failure() string {
	w.mu.Lock()
	defer w.mu.Unlock()

	return w.failed
}

// sequenceError is the error message of a sequence event of actor ("" for
// any other event).
func sequenceError(ev *machineapi.Event, actor string) string {
	if ev.GetActorId() != actor || !strings.HasSuffix(ev.GetData().GetTypeUrl(), "/machine.SequenceEvent") {
		return ""
	}

	var se machineapi.SequenceEvent
	if proto.Unmarshal(ev.GetData().GetValue(), &se) != nil {
		return ""
	}

	return se.GetError().GetMessage()
}
