package talosapi

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	cosiv1alpha1 "github.com/cosi-project/runtime/api/v1alpha1"
	"github.com/cosi-project/runtime/pkg/state"
	"github.com/cosi-project/runtime/pkg/state/impl/inmem"
	"github.com/cosi-project/runtime/pkg/state/impl/namespaced"
	cosiserver "github.com/cosi-project/runtime/pkg/state/protobuf/server"
	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	runtimeres "github.com/siderolabs/talos/pkg/machinery/resources/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// flakyState serves a node's COSI state; its first listFails Lists fail
// as a node under load can (Unavailable).
type flakyState struct {
	cosiv1alpha1.StateServer

	mu        sync.Mutex
	listFails int
}

func (s *flakyState) List(in *cosiv1alpha1.ListRequest, srv grpc.ServerStreamingServer[cosiv1alpha1.ListResponse]) error {
	s.mu.Lock()
	fail := s.listFails > 0
	s.listFails--
	s.mu.Unlock()

	if fail {
		return status.Error(codes.Unavailable, "transport is closing")
	}

	return s.StateServer.List(in, srv)
}

// extensionState holds the "schematic" extension a factory image reports.
func extensionState(t *testing.T, schematic string) state.State {
	t.Helper()

	st := state.WrapCore(namespaced.NewState(inmem.Build))
	ext := runtimeres.NewExtensionStatus(runtimeres.NamespaceName, "0")
	ext.TypedSpec().Metadata.Name = "schematic"
	ext.TypedSpec().Metadata.Version = schematic

	if err := st.Create(t.Context(), ext); err != nil {
		t.Fatal(err)
	}

	return st
}

// Review of the boot-ID waits, item A: a same-version upgrade whose node
// came back on its old schematic was reported done when the extension list
// failed once (a failed read was taken for "no schematic"), and the state
// recorded the new image. The read is tried again instead.
func TestSameVersionUpgradeRereadsASchematicReadThatFailed(t *testing.T) {
	t.Parallel()

	const old = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

	node := &rebootingNode{bootID: "0b1c2d3e-0000-4000-8000-000000000001", upgradeBoot: "0b1c2d3e-0000-4000-8000-000000000002"}
	cosi := &flakyState{StateServer: cosiserver.NewState(extensionState(t, old)), listFails: 1}

	osCA := newTestCA(t, "os")
	addr := serve(t, serverTLS(t, osCA, osCA), func(s *grpc.Server) {
		machineapi.RegisterMachineServiceServer(s, node)
		cosiv1alpha1.RegisterStateServer(s, cosi)
	})
	target := Target{Node: addr, Creds: clientCreds(t, osCA, "os:admin"), Configured: true}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	_, err := Upgrade(ctx, target, UpgradeRequest{Image: sameVersionImage, EvenIfSameVersion: true}, fastOptions())

	var lost *SchematicLostError
	if !errors.As(err, &lost) || lost.Running != old {
		t.Fatalf("Upgrade = %v; want a SchematicLostError naming the schematic the node still runs", err)
	}

	cosi.mu.Lock()
	defer cosi.mu.Unlock()

	if cosi.listFails >= 0 {
		t.Fatal("the extension list never failed: the test tested nothing")
	}
}
