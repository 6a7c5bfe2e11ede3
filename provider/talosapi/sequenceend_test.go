package talosapi

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cosi-project/runtime/pkg/state"
	"github.com/siderolabs/talos/pkg/machinery/api/common"
	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	configres "github.com/siderolabs/talos/pkg/machinery/resources/config"
	runtimeres "github.com/siderolabs/talos/pkg/machinery/resources/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const upgradeActor = "0b1c2d3e-cccc-4000-8000-000000000001"

// upgradeFailingNode accepts upgrades with an actor ID, and its sequence
// fails as machined reports it: START, then "sequence failed: ..." for the
// actor (v1alpha1_controller.go Run). The node runs on in its version and
// boot (Talos reboots it 10 s later: machined main.go handle).
type upgradeFailingNode struct {
	*rebootingNode

	events eventLog
}

const installerRefused = "sequence failed: pre-flight checks failed: this version of Talos cannot be upgraded from v1.12.5"

func (n *upgradeFailingNode) Upgrade(ctx context.Context, in *machineapi.UpgradeRequest) (*machineapi.UpgradeResponse, error) {
	if _, err := n.rebootingNode.Upgrade(ctx, in); err != nil {
		return nil, err
	}

	seq := "upgrade"
	if in.GetStage() {
		seq = "stageUpgrade"
	}

	n.events.publishFailed(seq, upgradeActor, installerRefused)

	return &machineapi.UpgradeResponse{Messages: []*machineapi.Upgrade{{Ack: "Upgrade request received", ActorId: upgradeActor}}}, nil
}

func (n *upgradeFailingNode) Events(in *machineapi.EventsRequest, srv grpc.ServerStreamingServer[machineapi.Event]) error {
	return n.events.serve(in, srv)
}

// sequenceEndSays checks the error of a wait that the node's failure
// ended: the node, its message, what to do; not a lost upgrade.
func sequenceEndSays(t *testing.T, err error, node, msg string) {
	t.Helper()

	for _, want := range []string{"node " + node, msg, "dmesg", "pulumi up"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}

	if n := strings.Count(err.Error(), "node "+node); n != 1 {
		t.Errorf("error %q names the node %d times, want once", err, n)
	}

	var lost *UpgradeLostError
	if errors.As(err, &lost) {
		t.Errorf("error %q is an UpgradeLostError, want the node's failure", err)
	}
}

// An upgrade whose sequence failed on the node ends the wait at once with
// the node's message, for a version change, a staged one and a same-version
// one alike, and is not sent again (it would fail the same way). Before,
// only reset waits read the failure: an upgrade waited for the node to
// come back on its old version (sent twice) or for the timeout.
func TestUpgradeFailureIsTheNodes(t *testing.T) {
	t.Parallel()

	for _, req := range []UpgradeRequest{
		{Image: "ghcr.io/siderolabs/installer:v1.12.6"},
		{Image: "ghcr.io/siderolabs/installer:v1.12.6", Stage: true},
		{Image: sameVersionImage, EvenIfSameVersion: true},
	} {
		node := &upgradeFailingNode{rebootingNode: &rebootingNode{bootID: "b1"}}
		target := serveNodeWithState(t, node, newFlakyState(nodeState(t, runtimeres.MachineStageRunning, newSchematic)))

		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)

		_, err := Upgrade(ctx, target, req, fastOptions())
		if err == nil || ctx.Err() != nil {
			t.Fatalf("%+v: Upgrade = %v; want the node's failure before the timeout", req, err)
		}

		cancel()
		sequenceEndSays(t, err, target.Node, installerRefused)

		if n := strings.Count(strings.Join(node.history(), ","), "upgrade"); n != 1 {
			t.Errorf("%+v: upgrade sent %d times, want once: %v", req, n, node.history())
		}
	}
}

// rebootAPINode is a Talos 1.14 node for applyMode reboot: it refuses mode
// REBOOT (Unimplemented, v1.14.0-rc.1 v1alpha1_server.go
// ApplyConfiguration), runs a NO_REBOOT configuration at once, and answers
// Reboot with an actor ID; its reboot sequence then never starts (locked:
// LOCKED without an actor) or fails (failWith, for the actor). After a
// failure it reboots into the saved configuration (bootAfterFailure, its
// new boot ID), as machined does 10 s later (main.go handle), or, unlike
// real Talos, runs on in its boot.
type rebootAPINode struct {
	*rebootingNode

	st               state.State
	locked           bool
	failWith         string
	bootAfterFailure string
	events           eventLog

	// under rebootingNode.mu
	failureSent       bool
	readsSinceFailure int
}

const rebootActor = "0b1c2d3e-dddd-4000-8000-000000000001"

func (n *rebootAPINode) ApplyConfiguration(ctx context.Context, in *machineapi.ApplyConfigurationRequest) (*machineapi.ApplyConfigurationResponse, error) {
	if in.GetMode() != machineapi.ApplyConfigurationRequest_NO_REBOOT {
		return nil, status.Error(codes.Unimplemented, "the REBOOT mode is not supported, please use AUTO or NO_REBOOT modes instead")
	}

	cfg, err := configloader.NewFromBytes(in.GetData())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}

	for _, id := range []string{configres.ActiveID, configres.PersistentID} {
		if err := n.st.Create(ctx, configres.NewMachineConfigWithID(cfg, id)); err != nil {
			return nil, err
		}
	}

	return &machineapi.ApplyConfigurationResponse{Messages: []*machineapi.ApplyConfiguration{{
		Mode: machineapi.ApplyConfigurationRequest_NO_REBOOT, ModeDetails: "Applied configuration without a reboot",
	}}}, nil
}

func (n *rebootAPINode) Reboot(context.Context, *machineapi.RebootRequest) (*machineapi.RebootResponse, error) {
	n.mu.Lock()
	n.calls = append(n.calls, "reboot")
	n.mu.Unlock()

	switch {
	case n.locked:
		n.events.publishLocked("reboot")
	case n.failWith != "":
		n.events.publishFailed("reboot", rebootActor, n.failWith)
	}

	return &machineapi.RebootResponse{Messages: []*machineapi.Reboot{{ActorId: rebootActor}}}, nil
}

func (n *rebootAPINode) Events(in *machineapi.EventsRequest, srv grpc.ServerStreamingServer[machineapi.Event]) error {
	return n.events.serve(in, &failureSentNotice{srv, n})
}

// failureSentNotice marks when the reboot's failure went out on an events
// stream.
type failureSentNotice struct {
	grpc.ServerStreamingServer[machineapi.Event]

	n *rebootAPINode
}

func (s *failureSentNotice) Send(ev *machineapi.Event) error {
	if err := s.ServerStreamingServer.Send(ev); err != nil {
		return err
	}

	if se := sequenceEvent(ev); se != nil && se.GetError().GetCode() == common.Code_FATAL {
		s.n.mu.Lock()
		s.n.failureSent = true
		s.n.mu.Unlock()
	}

	return nil
}

// Read serves the boot ID; with bootAfterFailure, the node has rebooted
// by the second read after the failure went out to the provider, so that
// the provider has seen the failure before the new boot, as machined's
// 10 s pause lets it.
func (n *rebootAPINode) Read(in *machineapi.ReadRequest, srv grpc.ServerStreamingServer[common.Data]) error {
	n.mu.Lock()
	if n.failureSent && n.bootAfterFailure != "" {
		n.readsSinceFailure++
		if n.readsSinceFailure == 2 {
			n.bootID = n.bootAfterFailure
		}
	}
	n.mu.Unlock()

	return n.rebootingNode.Read(in, srv)
}

// serveRebootAPINode serves node as a running Talos 1.14.1 node (boot b1)
// whose Reboot API behaves as its fields say.
func serveRebootAPINode(t *testing.T, node *rebootAPINode) Target {
	t.Helper()

	node.rebootingNode = &rebootingNode{bootID: "b1", version: "v1.14.1"}
	node.st = nodeState(t, runtimeres.MachineStageRunning, newSchematic)

	return serveNodeWithState(t, node, newFlakyState(node.st))
}

// The reboot applyMode reboot asks of Talos 1.14 through the Reboot API
// ends the wait at once when machined never starts it (another sequence
// holds the lock: "sequence not started: locked", without an actor ID),
// and is sent once. Before, the wait for the new boot ran to its timeout.
func TestRebootAfterApplyEndsWhenLocked(t *testing.T) {
	t.Parallel()

	node := &rebootAPINode{locked: true}
	target := serveRebootAPINode(t, node)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	_, err := Apply(ctx, target, ApplyRequest{Config: testMachineConfig(t, "/dev/sda"), Mode: ApplyReboot}, fastOptions())
	if err == nil || ctx.Err() != nil {
		t.Fatalf("Apply = %v; want the node's answer before the timeout", err)
	}

	lockedErrorSays(t, err, target.Node)

	if !strings.Contains(err.Error(), "reboot") {
		t.Errorf("error %q does not say it is the reboot", err)
	}

	if n := strings.Count(strings.Join(node.history(), ","), "reboot"); n != 1 {
		t.Errorf("reboot sent %d times, want once: %v", n, node.history())
	}
}

// A reboot sequence that fails on the node is followed by the reboot
// machined does after any fatal sequence error (main.go handle, 10 s
// later), into the configuration the apply saved: the apply waits for that
// boot and succeeds. Before, the failure ended the wait at once and the
// update failed although the node came back running the configuration.
func TestRebootAfterApplyWaitsOutAFailedReboot(t *testing.T) {
	t.Parallel()

	node := &rebootAPINode{failWith: "sequence failed: stopping services: timeout", bootAfterFailure: "b2"}
	target := serveRebootAPINode(t, node)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	if _, err := Apply(ctx, target, ApplyRequest{Config: testMachineConfig(t, "/dev/sda"), Mode: ApplyReboot}, fastOptions()); err != nil {
		t.Fatalf("Apply = %v; want the node's new boot with the configuration", err)
	}

	if n := strings.Count(strings.Join(node.history(), ","), "reboot"); n != 1 {
		t.Errorf("reboot sent %d times, want once: %v", n, node.history())
	}
}

// A failed reboot sequence after which the node never boots again ends in
// the wait's timeout, which quotes the node's message once with what to do.
func TestRebootAfterApplyFailedAndNoBootQuotesTheNode(t *testing.T) {
	t.Parallel()

	const failed = "sequence failed: stopping services: timeout"

	target := serveRebootAPINode(t, &rebootAPINode{failWith: failed})

	// the wait's own deadline, which this node makes it reach
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	_, err := Apply(ctx, target, ApplyRequest{Config: testMachineConfig(t, "/dev/sda"), Mode: ApplyReboot}, fastOptions())
	if err == nil {
		t.Fatal("Apply succeeded; want the timeout quoting the node")
	}

	sequenceEndSays(t, err, target.Node, failed)

	if n := strings.Count(err.Error(), failed); n != 1 {
		t.Errorf("error %q quotes the node %d times, want once", err, n)
	}

	if !strings.Contains(err.Error(), "reboot") {
		t.Errorf("error %q does not say it is the reboot", err)
	}
}
