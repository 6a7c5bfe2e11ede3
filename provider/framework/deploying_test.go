package framework

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"testing"

	rpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	"github.com/proxmoxtalos/proxmoxtalos/provider/runtimetune"
)

// nopServer answers every call with an empty response.
type nopServer struct {
	rpc.UnimplementedResourceProviderServer
}

func (nopServer) Construct(context.Context, *rpc.ConstructRequest) (*rpc.ConstructResponse, error) {
	return &rpc.ConstructResponse{}, nil
}

func (nopServer) Create(context.Context, *rpc.CreateRequest) (*rpc.CreateResponse, error) {
	return &rpc.CreateResponse{}, nil
}

// A preview runs on one P (runtimetune.Tune); a call that changes something gives the
// process Go's GOMAXPROCS back, a preview's Construct does not.
func TestCallsThatChangeSomethingRestoreGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOMAXPROCS", "") // restored after the test
	t.Setenv("GOGC", "")
	if err := os.Unsetenv("GOMAXPROCS"); err != nil {
		t.Fatal(err)
	}
	runtime.GOMAXPROCS(3) // Go's default on a 3-core machine
	runtimetune.Tune()
	srv := WithProviderInstance(nopServer{})
	if _, err := srv.Construct(context.Background(), &rpc.ConstructRequest{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("GOMAXPROCS after a preview's Construct: %d, want 1", got)
	}
	if _, err := srv.Create(context.Background(), &rpc.CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Errorf("GOMAXPROCS after a Create: %d, want Go's 3 back", got)
	}
}
