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

// resettingNode is a rebootingNode that accepts resets: it answers the
// reset's actor ID and, with failWith set, replays the failed sequence's
// event for it, as machined's event stream does (v1alpha1_controller.go
// Run: "sequence failed: ..." for the actor).
type resettingNode struct {
	*rebootingNode

	failWith string
}

const resetActor = "0b1c2d3e-aaaa-4000-8000-000000000001"

func (n *resettingNode) Reset(context.Context, *machineapi.ResetRequest) (*machineapi.ResetResponse, error) {
	n.mu.Lock()
	n.calls = append(n.calls, "reset")
	n.accepted = time.Now()
	n.mu.Unlock()

	return &machineapi.ResetResponse{Messages: []*machineapi.Reset{{ActorId: resetActor}}}, nil
}

func (n *resettingNode) Events(in *machineapi.EventsRequest, srv grpc.ServerStreamingServer[machineapi.Event]) error {
	if n.failWith != "" && in.GetWithActorId() == resetActor && in.GetTailEvents() < 0 {
		value, err := proto.Marshal(&machineapi.SequenceEvent{Sequence: "reset", Action: machineapi.SequenceEvent_NOOP,
			Error: &common.Error{Code: common.Code_FATAL, Message: n.failWith}})
		if err != nil {
			return err
		}

		if err := srv.Send(&machineapi.Event{Data: &anypb.Any{TypeUrl: "talos/runtime/machine.SequenceEvent", Value: value}, ActorId: resetActor}); err != nil {
			return err
		}
	}

	<-srv.Context().Done()

	return nil
}

// A reset the node reports failed ends the wait with the node's message,
// while the node still runs its boot in stage running. Before, the wait
// knew nothing of the message and ended only after a grace period.
func TestResetFailureIsTheNodes(t *testing.T) {
	t.Parallel()

	node := &resettingNode{rebootingNode: &rebootingNode{bootID: "b1"}, failWith: "sequence failed: failed to leave cluster: etcdserver: re-configuration failed"}
	target := serveNodeWithState(t, node, newFlakyState(nodeState(t, runtimeres.MachineStageRunning, newSchematic)))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	_, err := Reset(ctx, target, ResetRequest{}, fastOptions())
	if err == nil || ctx.Err() != nil {
		t.Fatalf("Reset = %v; want the node's failure before the timeout", err)
	}

	for _, want := range []string{target.Node, "the reset failed on the node", "re-configuration failed", "pulumi up"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// A node under load that runs its old boot in stage running long after it
// accepted the reset has not started it: the wait goes on until it stops
// answering. Before, a node still running after RebootGrace was reported
// failed.
func TestResetWaitsForASlowStart(t *testing.T) {
	t.Parallel()

	node := &resettingNode{rebootingNode: &rebootingNode{bootID: "b1", answered: make(chan struct{}, 1)}}
	target := serveNodeWithState(t, node, newFlakyState(nodeState(t, runtimeres.MachineStageRunning, newSchematic)))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	done := make(chan error, 1)

	go func() {
		_, err := Reset(ctx, target, ResetRequest{}, fastOptions())
		done <- err
	}()

	// Twenty polls: many times the former grace period scaled to these
	// options' pauses.
	for range 20 {
		select {
		case <-node.answered:
		case err := <-done:
			t.Fatalf("Reset returned (err %v) while the node ran its old boot in stage running", err)
		}
	}

	node.goDown(1 << 20)

	if err := <-done; err != nil {
		t.Fatalf("Reset: %v", err)
	}
}
