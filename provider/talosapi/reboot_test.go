package talosapi

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/common"
	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	runtimeres "github.com/siderolabs/talos/pkg/machinery/resources/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// rebootingNode is a configured node whose reboot the test decides: it
// answers Version with the same version throughout, its boot ID until
// reboot is called, and accepts upgrades without acting on them.
type rebootingNode struct {
	machineapi.UnimplementedMachineServiceServer

	mu     sync.Mutex
	bootID string
	// upgradeBoot, when set, is the boot ID the node has from its
	// acceptance of an upgrade on (it rebooted at once).
	upgradeBoot string
	readErr     error     // Read's answer instead of the boot ID
	calls       []string  // "read <boot ID>", "upgrade" in order
	accepted    time.Time // when it accepted an upgrade
	// sinceAccepted receives, for each boot ID read after an accepted
	// upgrade, how long after the acceptance it came.
	sinceAccepted chan time.Duration
	// version is the Talos version it runs ("" is v1.12.5).
	version string
	// down: this many Version calls fail as a node that does not answer.
	down int
	// answered receives a value for each Version answered after an
	// accepted upgrade (when not nil; dropped when full).
	answered chan struct{}
}

func (n *rebootingNode) Version(context.Context, *emptypb.Empty) (*machineapi.VersionResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()

	if n.down > 0 {
		n.down--

		return nil, status.Error(codes.Unavailable, "connection refused")
	}

	if !n.accepted.IsZero() && n.answered != nil {
		select {
		case n.answered <- struct{}{}:
		default:
		}
	}

	v := n.version
	if v == "" {
		v = "v1.12.5"
	}

	return &machineapi.VersionResponse{Messages: []*machineapi.Version{{Version: &machineapi.VersionInfo{Tag: v}}}}, nil
}

// Read serves the boot ID as the kernel writes it: a UUID and a newline.
func (n *rebootingNode) Read(in *machineapi.ReadRequest, srv grpc.ServerStreamingServer[common.Data]) error {
	if in.GetPath() != bootIDPath {
		return status.Error(codes.NotFound, "stat "+in.GetPath()+": no such file or directory")
	}

	n.mu.Lock()
	id, err, accepted := n.bootID, n.readErr, n.accepted
	n.calls = append(n.calls, "read "+id)
	n.mu.Unlock()

	if err != nil {
		return err
	}

	if !accepted.IsZero() {
		select {
		case n.sinceAccepted <- time.Since(accepted):
		default:
		}
	}

	return srv.Send(&common.Data{Bytes: []byte(id + "\n")})
}

func (n *rebootingNode) Upgrade(context.Context, *machineapi.UpgradeRequest) (*machineapi.UpgradeResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()

	n.calls = append(n.calls, "upgrade")
	n.accepted = time.Now()

	if n.upgradeBoot != "" {
		n.bootID = n.upgradeBoot
	}

	return &machineapi.UpgradeResponse{Messages: []*machineapi.Upgrade{{Ack: "Upgrade request received"}}}, nil
}

func (n *rebootingNode) reboot(id string) {
	n.mu.Lock()
	defer n.mu.Unlock()

	n.bootID = id
}

// rebootInto reboots the node into another Talos version.
func (n *rebootingNode) rebootInto(version, id string) {
	n.mu.Lock()
	defer n.mu.Unlock()

	n.version, n.bootID = version, id
}

// goDown makes the next calls Version calls fail as if the node did not
// answer.
func (n *rebootingNode) goDown(calls int) {
	n.mu.Lock()
	defer n.mu.Unlock()

	n.down = calls
}

func (n *rebootingNode) history() []string {
	n.mu.Lock()
	defer n.mu.Unlock()

	return append([]string(nil), n.calls...)
}

func serveRebootingNode(t *testing.T, n *rebootingNode) Target {
	return serveNodeWithState(t, n, newFlakyState(nodeState(t, runtimeres.MachineStageRunning, newSchematic)))
}

const sameVersionImage = "factory.talos.dev/nocloud-installer/376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba:v1.12.5"

// A node that accepted a same-version upgrade (another schematic) and
// answers, running the same version, long after it accepted, has not
// rebooted yet: Upgrade must not return until it answers from another
// boot. Before, the wait fell back to the version after a grace period and
// returned while the node was still about to go down.
func TestSameVersionUpgradeWaitsForTheReboot(t *testing.T) {
	t.Parallel()

	node := &rebootingNode{bootID: "0b1c2d3e-0000-4000-8000-000000000001", sinceAccepted: make(chan time.Duration, 1)}
	target := serveRebootingNode(t, node)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	o := fastOptions()

	const grace = 50 * time.Millisecond // the grace period the wait once had

	done := make(chan error, 1)

	go func() {
		_, err := Upgrade(ctx, target, UpgradeRequest{Image: sameVersionImage, EvenIfSameVersion: true}, o)
		done <- err
	}()

	// The node keeps its boot until it was asked after twice the grace.
	for waited := time.Duration(0); waited <= 2*grace; {
		select {
		case err := <-done:
			t.Fatalf("Upgrade returned (err %v) while the node still ran the boot it accepted the upgrade in; calls: %v", err, node.history())
		case waited = <-node.sinceAccepted:
		}
	}

	node.reboot("0b1c2d3e-0000-4000-8000-000000000002")

	if err := <-done; err != nil {
		t.Fatalf("Upgrade after the reboot: %v", err)
	}

	// The boot ID compared with is the one read before the request.
	calls := node.history()
	if len(calls) < 2 || calls[0] != "read 0b1c2d3e-0000-4000-8000-000000000001" || calls[1] != "upgrade" {
		t.Errorf("calls = %v; want the boot ID read, then the upgrade", calls)
	}
}

// A node that refuses to read its boot ID is not sent a same-version
// upgrade: its reboot could not be told from its running on.
func TestSameVersionUpgradeNeedsTheBootID(t *testing.T) {
	t.Parallel()

	node := &rebootingNode{bootID: "x", readErr: status.Error(codes.PermissionDenied, "not authorized")}
	target := serveRebootingNode(t, node)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	res, err := Upgrade(ctx, target, UpgradeRequest{Image: sameVersionImage, EvenIfSameVersion: true}, fastOptions())

	var we *WaitError
	if err == nil || errors.As(err, &we) {
		t.Fatalf("Upgrade = %+v, %v; want an error at once", res, err)
	}

	for _, want := range []string{target.Node, bootIDPath, "not authorized", "os:admin", "was not sent"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}

	for _, c := range node.history() {
		if c == "upgrade" {
			t.Fatal("the upgrade was sent")
		}
	}
}

// An upgrade to another version is sent to a node that refuses to read its
// boot ID: the version tells whether it took.
func TestVersionUpgradeNeedsNoBootID(t *testing.T) {
	t.Parallel()

	node := &rebootingNode{bootID: "x", readErr: status.Error(codes.PermissionDenied, "not authorized"), answered: make(chan struct{}, 1)}
	target := serveRebootingNode(t, node)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	done := make(chan error, 1)

	go func() {
		_, err := Upgrade(ctx, target, UpgradeRequest{Image: versionChangeImage}, fastOptions())
		done <- err
	}()

	select {
	case <-node.answered:
	case err := <-done:
		t.Fatalf("Upgrade = %v before the node answered after accepting; calls %v", err, node.history())
	}

	node.rebootInto("v1.12.6", "y")

	if err := <-done; err != nil {
		t.Fatalf("Upgrade: %v", err)
	}
}
