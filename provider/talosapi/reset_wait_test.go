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
)

// resettingNode is a rebootingNode that accepts resets: it answers the
// reset's actor ID and publishes what machined does for it: with failWith
// set, the sequence's start and its failure for the actor
// (v1alpha1_controller.go Run: "sequence failed: ..."); with locked, Run's
// LOCKED event without an actor, and the node runs on.
type resettingNode struct {
	*rebootingNode

	failWith string
	locked   bool
	events   eventLog
}

const resetActor = "0b1c2d3e-aaaa-4000-8000-000000000001"

func (n *resettingNode) Reset(context.Context, *machineapi.ResetRequest) (*machineapi.ResetResponse, error) {
	n.mu.Lock()
	n.calls = append(n.calls, "reset")
	n.accepted = time.Now()
	n.mu.Unlock()

	switch {
	case n.locked:
		n.events.publishLocked("reset")
	case n.failWith != "":
		n.events.publishFailed("reset", resetActor, n.failWith)
	}

	return &machineapi.ResetResponse{Messages: []*machineapi.Reset{{ActorId: resetActor}}}, nil
}

func (n *resettingNode) Events(in *machineapi.EventsRequest, srv grpc.ServerStreamingServer[machineapi.Event]) error {
	return n.events.serve(in, srv)
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
	// Twenty polls: many times the former grace period scaled to these
	// options' pauses.
	resetRunsUntilDown(t, node, "the node ran its old boot in stage running")
}

// resetRunsUntilDown serves node in stage running and resets it: the reset
// must not return while the node answers twenty polls (while what says),
// and must succeed once the node goes down.
func resetRunsUntilDown(t *testing.T, node *resettingNode, what string) {
	t.Helper()

	target := serveNodeWithState(t, node, newFlakyState(nodeState(t, runtimeres.MachineStageRunning, newSchematic)))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	done := make(chan error, 1)

	go func() {
		_, err := Reset(ctx, target, ResetRequest{}, fastOptions())
		done <- err
	}()

	for range 20 {
		select {
		case <-node.answered:
		case err := <-done:
			t.Fatalf("Reset returned (err %v) while %s", err, what)
		}
	}

	node.goDown(1 << 20)

	if err := <-done; err != nil {
		t.Fatalf("Reset: %v", err)
	}
}

// bootIDHangingNode is a resettingNode whose boot ID read never answers
// (a node under load): the read takes up the whole attempt.
type bootIDHangingNode struct {
	*resettingNode
}

func (n *bootIDHangingNode) Read(_ *machineapi.ReadRequest, srv grpc.ServerStreamingServer[common.Data]) error {
	<-srv.Context().Done()

	return srv.Context().Err()
}

// Reset accepts the reset, and the node stops answering (it resets).
func (n *bootIDHangingNode) Reset(ctx context.Context, in *machineapi.ResetRequest) (*machineapi.ResetResponse, error) {
	resp, err := n.resettingNode.Reset(ctx, in)
	n.goDown(1 << 20)

	return resp, err
}

// The boot ID read before the reset has an attempt of its own: a read that
// uses it up still leaves the reset call a whole attempt. Before, both
// shared one, and the reset was reported refused.
func TestResetCallHasItsOwnAttempt(t *testing.T) {
	t.Parallel()

	node := &bootIDHangingNode{&resettingNode{rebootingNode: &rebootingNode{bootID: "b1"}}}
	target := serveNodeWithState(t, node, newFlakyState(nodeState(t, runtimeres.MachineStageRunning, newSchematic)))

	o := fastOptions()
	o.AttemptTimeout = 200 * time.Millisecond

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	_, err := Reset(ctx, target, ResetRequest{}, o)
	if err != nil {
		t.Fatalf("Reset = %v; want it accepted", err)
	}
}
