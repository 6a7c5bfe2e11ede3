package talosapi

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/common"
	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	runtimeres "github.com/siderolabs/talos/pkg/machinery/resources/runtime"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

func lockedErrorSays(t *testing.T, err error, node string) {
	t.Helper()

	for _, want := range []string{node, "did not start", "busy with another operation", "sequence not started: locked", "pulumi up"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// A reset that machined refuses because another sequence holds its lock
// ends the wait at once: the LOCKED event has no actor ID, and the node runs
// on in its boot. Before, the watch asked the node for the reset's actor's
// events only, never saw it, and waited out the whole timeout.
func TestResetLockedEndsTheWait(t *testing.T) {
	t.Parallel()

	node := &resettingNode{rebootingNode: &rebootingNode{bootID: "b1"}, locked: true}
	target := serveNodeWithState(t, node, newFlakyState(nodeState(t, runtimeres.MachineStageRunning, newSchematic)))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	_, err := Reset(ctx, target, ResetRequest{}, fastOptions())
	if err == nil || ctx.Err() != nil {
		t.Fatalf("Reset = %v; want the node's LOCKED before the timeout", err)
	}

	lockedErrorSays(t, err, target.Node)
}

// A LOCKED reset event from before the request (an earlier refused reset of
// the same boot) says nothing of this one: the reset runs, and the wait ends
// when the node stops answering.
func TestResetIgnoresAnEarlierLocked(t *testing.T) {
	t.Parallel()

	node := &resettingNode{rebootingNode: &rebootingNode{bootID: "b1", answered: make(chan struct{}, 1)}}
	node.events.publishLocked("reset")
	resetRunsUntilDown(t, node, "the reset ran")
}

// upgradeLockedNode accepts upgrades with an actor ID and refuses to start
// them as machined does when another sequence holds the lock: Run publishes
// LOCKED without an actor for "upgrade" (or "stageUpgrade"), and the node
// runs on in its version and boot.
type upgradeLockedNode struct {
	*rebootingNode

	events eventLog
}

func (n *upgradeLockedNode) Upgrade(ctx context.Context, in *machineapi.UpgradeRequest) (*machineapi.UpgradeResponse, error) {
	if _, err := n.rebootingNode.Upgrade(ctx, in); err != nil {
		return nil, err
	}

	seq := "upgrade"
	if in.GetStage() {
		seq = "stageUpgrade"
	}

	n.events.publishLocked(seq)

	return &machineapi.UpgradeResponse{Messages: []*machineapi.Upgrade{{Ack: "Upgrade request received", ActorId: "0b1c2d3e-bbbb-4000-8000-000000000001"}}}, nil
}

func (n *upgradeLockedNode) Events(in *machineapi.EventsRequest, srv grpc.ServerStreamingServer[machineapi.Event]) error {
	return n.events.serve(in, srv)
}

// An upgrade machined did not start (locked) ends the wait at once, for a
// version change, a staged one and a same-version one alike, and is not
// sent again. Before, the wait went on until the timeout.
func TestUpgradeLockedEndsTheWait(t *testing.T) {
	t.Parallel()

	for _, req := range []UpgradeRequest{
		{Image: "ghcr.io/siderolabs/installer:v1.12.6"},
		{Image: "ghcr.io/siderolabs/installer:v1.12.6", Stage: true},
		{Image: sameVersionImage, EvenIfSameVersion: true},
	} {
		node := &upgradeLockedNode{rebootingNode: &rebootingNode{bootID: "b1"}}
		target := serveNodeWithState(t, node, newFlakyState(nodeState(t, runtimeres.MachineStageRunning, newSchematic)))

		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)

		_, err := Upgrade(ctx, target, req, fastOptions())
		if err == nil || ctx.Err() != nil {
			t.Fatalf("%+v: Upgrade = %v; want the node's LOCKED before the timeout", req, err)
		}

		cancel()
		lockedErrorSays(t, err, target.Node)

		if n := strings.Count(strings.Join(node.history(), ","), "upgrade"); n != 1 {
			t.Errorf("%+v: upgrade sent %d times, want once: %v", req, n, node.history())
		}
	}
}

func sequenceEv(t *testing.T, actor string, se *machineapi.SequenceEvent) *machineapi.Event {
	t.Helper()

	value, err := proto.Marshal(se)
	if err != nil {
		t.Fatal(err)
	}

	return &machineapi.Event{Data: &anypb.Any{TypeUrl: "talos/runtime/machine.SequenceEvent", Value: value}, ActorId: actor}
}

// Only a LOCKED of the request's sequence, after the mark and before any
// event of the request's actor, says the request never started.
func TestSequenceWatchSeesLockedOnlyForItsRequest(t *testing.T) {
	t.Parallel()

	locked := func(seq string) *machineapi.SequenceEvent {
		return &machineapi.SequenceEvent{Sequence: seq, Action: machineapi.SequenceEvent_NOOP,
			Error: &common.Error{Code: common.Code_LOCKED, Message: "sequence not started: locked"}}
	}

	for _, c := range []struct {
		name      string
		afterMark bool
		events    []*machineapi.Event
		locked    bool
	}{
		{"locked", true, []*machineapi.Event{sequenceEv(t, "", locked("reset"))}, true},
		{"another sequence's", true, []*machineapi.Event{sequenceEv(t, "", locked("reboot"))}, false},
		{"no mark", false, []*machineapi.Event{sequenceEv(t, "", locked("reset"))}, false},
		{"after the actor's start", true, []*machineapi.Event{
			sequenceEv(t, "a1", &machineapi.SequenceEvent{Sequence: "reset", Action: machineapi.SequenceEvent_START}),
			sequenceEv(t, "", locked("reset")),
		}, false},
	} {
		w := &sequenceWatch{}
		for _, ev := range c.events {
			w.see(ev, "a1", c.afterMark, []string{"reset"})
		}

		if _, got := w.outcome(); got != c.locked {
			t.Errorf("%s: locked = %v, want %v", c.name, got, c.locked)
		}
	}
}
