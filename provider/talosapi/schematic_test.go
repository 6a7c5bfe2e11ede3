package talosapi

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	cosiv1alpha1 "github.com/cosi-project/runtime/api/v1alpha1"
	"github.com/cosi-project/runtime/pkg/resource"
	"github.com/cosi-project/runtime/pkg/state"
	"github.com/cosi-project/runtime/pkg/state/impl/inmem"
	"github.com/cosi-project/runtime/pkg/state/impl/namespaced"
	cosiserver "github.com/cosi-project/runtime/pkg/state/protobuf/server"
	"github.com/siderolabs/talos/pkg/machinery/api/common"
	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	runtimeres "github.com/siderolabs/talos/pkg/machinery/resources/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// flakyState serves a node's COSI state (switched with set, as a reboot
// does); its first listFails Lists and getFails Gets fail as a node under
// load can (Unavailable).
type flakyState struct {
	cosiv1alpha1.UnimplementedStateServer

	mu        sync.Mutex
	current   cosiv1alpha1.StateServer
	listFails int
	getFails  int
}

func newFlakyState(st state.State) *flakyState {
	return &flakyState{current: cosiserver.NewState(st)}
}

func (s *flakyState) set(st state.State) {
	s.mu.Lock()
	defer s.mu.Unlock()

	s.current = cosiserver.NewState(st)
}

// take decrements *fails and reports whether this call fails, and the
// server that answers it otherwise.
func (s *flakyState) take(fails *int) (cosiv1alpha1.StateServer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()

	*fails--

	return s.current, *fails >= 0
}

func (s *flakyState) List(in *cosiv1alpha1.ListRequest, srv grpc.ServerStreamingServer[cosiv1alpha1.ListResponse]) error {
	cur, fail := s.take(&s.listFails)
	if fail {
		return status.Error(codes.Unavailable, "transport is closing")
	}

	return cur.List(in, srv)
}

func (s *flakyState) Get(ctx context.Context, in *cosiv1alpha1.GetRequest) (*cosiv1alpha1.GetResponse, error) {
	cur, fail := s.take(&s.getFails)
	if fail {
		return nil, status.Error(codes.Unavailable, "transport is closing")
	}

	return cur.Get(ctx, in)
}

// failed reports whether every scripted failure happened.
func (s *flakyState) failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()

	return s.listFails < 0 && s.getFails < 0
}

// nodeState is a node's COSI state: its stage and the "schematic"
// extension a factory image reports.
func nodeState(t *testing.T, stage runtimeres.MachineStage, schematic string) state.State {
	t.Helper()

	st := state.WrapCore(namespaced.NewState(inmem.Build))
	ext := runtimeres.NewExtensionStatus(runtimeres.NamespaceName, "0")
	ext.TypedSpec().Metadata.Name = "schematic"
	ext.TypedSpec().Metadata.Version = schematic

	ms := runtimeres.NewMachineStatus()
	ms.TypedSpec().Stage = stage

	for _, r := range []resource.Resource{ext, ms} {
		if err := st.Create(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}

	return st
}

func serveNodeWithState(t *testing.T, node machineapi.MachineServiceServer, cosi *flakyState) Target {
	osCA := newTestCA(t, "os")
	addr := serve(t, serverTLS(t, osCA, osCA), func(s *grpc.Server) {
		machineapi.RegisterMachineServiceServer(s, node)
		cosiv1alpha1.RegisterStateServer(s, cosi)
	})

	return Target{Node: addr, Creds: clientCreds(t, osCA, "os:admin"), Configured: true}
}

const (
	oldSchematic = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	newSchematic = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba" // sameVersionImage's
)

// Review of the boot-ID waits, item A: a same-version upgrade whose node
// came back on its old schematic was reported done when the extension list
// failed once (a failed read was taken for "no schematic"), and the state
// recorded the new image. The read is tried again instead.
func TestSameVersionUpgradeRereadsASchematicReadThatFailed(t *testing.T) {
	t.Parallel()

	node := &rebootingNode{bootID: "0b1c2d3e-0000-4000-8000-000000000001", upgradeBoot: "0b1c2d3e-0000-4000-8000-000000000002"}
	cosi := newFlakyState(nodeState(t, runtimeres.MachineStageRunning, oldSchematic))
	cosi.listFails = 1
	target := serveNodeWithState(t, node, cosi)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	_, err := Upgrade(ctx, target, UpgradeRequest{Image: sameVersionImage, EvenIfSameVersion: true}, fastOptions())

	var lost *SchematicLostError
	if !errors.As(err, &lost) || lost.Running != oldSchematic {
		t.Fatalf("Upgrade = %v; want a SchematicLostError naming the schematic the node still runs", err)
	}

	if !cosi.failed() {
		t.Fatal("the extension list never failed: the test tested nothing")
	}
}

// stagedNode is a rebootingNode whose accepted upgrade is staged: it
// answers from the boot that runs the install (Talos 1.13 and later start
// apid before the install sequence: siderolabs/talos b7d70cf62, in
// v1.13.0), on the old schematic, and at its second
// boot ID read after the upgrade it has rebooted into the new image.
type stagedNode struct {
	*rebootingNode

	cosi  *flakyState
	final state.State
	reads int
}

func (n *stagedNode) Read(in *machineapi.ReadRequest, srv grpc.ServerStreamingServer[common.Data]) error {
	n.mu.Lock()
	if !n.accepted.IsZero() {
		if n.reads++; n.reads == 2 {
			n.bootID = "0b1c2d3e-0000-4000-8000-000000000003"
			n.cosi.set(n.final)
		}
	}
	n.mu.Unlock()

	return n.rebootingNode.Read(in, srv)
}

// Review of the boot-ID waits, item B: a staged same-version upgrade's node
// answers, from a new boot, on the old schematic while it installs. A stage
// read that failed there was taken for "no stage", and the old schematic
// ended the wait with SchematicLostError; the stage must be read as running
// before the schematic decides.
func TestStagedSameVersionUpgradeWaitsOutTheInstallBoot(t *testing.T) {
	t.Parallel()

	cosi := newFlakyState(nodeState(t, runtimeres.MachineStageInstalling, oldSchematic))
	cosi.getFails = 1
	node := &stagedNode{
		rebootingNode: &rebootingNode{bootID: "0b1c2d3e-0000-4000-8000-000000000001", upgradeBoot: "0b1c2d3e-0000-4000-8000-000000000002"},
		cosi:          cosi,
		final:         nodeState(t, runtimeres.MachineStageRunning, newSchematic),
	}
	target := serveNodeWithState(t, node, cosi)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The first Get after the acceptance is the stage read of the install
	// boot (bootBeforeUpgrade reads no COSI).
	if _, err := Upgrade(ctx, target, UpgradeRequest{Image: sameVersionImage, EvenIfSameVersion: true, Stage: true}, fastOptions()); err != nil {
		t.Fatalf("staged same-version upgrade: %v", err)
	}

	if !cosi.failed() {
		t.Fatal("the stage read never failed: the test tested nothing")
	}
}
