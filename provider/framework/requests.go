package framework

import (
	"context"
	"sync"

	p "github.com/pulumi/pulumi-go-provider"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	rpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/proxmoxtalos/proxmoxtalos/provider/runtimetune"
)

// What the engine sends and infer v1.5.0's typed requests do not pass on:
// whether a resource's Check saw old inputs, the ID its Diff saw, and the
// ID of the provider resource from Configure. A VM's create identity needs
// them (proxmox identity.go). They are kept per URN for the life of the
// process, because a create runs in a request of its own after Check and
// Diff.

// checkedFresh records, per URN, whether its last Check had no old inputs;
// diffedID the resource ID its last Diff saw.
var checkedFresh, diffedID sync.Map

// WithRequestFacts records, for every resource, what CheckedFresh and
// DiffedID answer.
func WithRequestFacts(prov p.Provider) p.Provider {
	check, diff := prov.Check, prov.Diff
	prov.Check = func(ctx context.Context, req p.CheckRequest) (p.CheckResponse, error) {
		checkedFresh.Store(req.Urn, req.State.Len() == 0)
		return check(ctx, req)
	}
	prov.Diff = func(ctx context.Context, req p.DiffRequest) (p.DiffResponse, error) {
		diffedID.Store(req.Urn, req.ID)
		return diff(ctx, req)
	}
	return prov
}

// CheckedFresh: the last Check of urn had no old inputs, so the resource
// is not in the state (false also when no Check was seen).
func CheckedFresh(urn presource.URN) bool {
	f, _ := checkedFresh.Load(urn)
	isFresh, _ := f.(bool)
	return isFresh
}

// DiffedID is the resource ID the last Diff of urn saw ("" when none).
func DiffedID(urn presource.URN) string {
	h, _ := diffedID.Load(urn)
	id, _ := h.(string)
	return id
}

var instance struct {
	mu sync.Mutex
	id string
}

// WithProviderInstance records the ID of the provider resource the server
// serves, which the engine sends with Configure (ProviderInstance answers
// it): infer's Configure request does not carry it.
func WithProviderInstance(srv rpc.ResourceProviderServer) rpc.ResourceProviderServer {
	return instanceRecorder{srv}
}

type instanceRecorder struct{ rpc.ResourceProviderServer }

func (s instanceRecorder) Configure(ctx context.Context, req *rpc.ConfigureRequest) (*rpc.ConfigureResponse, error) {
	SetProviderInstance(req.GetId())
	return s.ResourceProviderServer.Configure(ctx, req)
}

// The calls that change something give the process Go's GOMAXPROCS back (a preview runs
// on one P: runtimetune).

func (s instanceRecorder) Construct(ctx context.Context, req *rpc.ConstructRequest) (*rpc.ConstructResponse, error) {
	if !req.GetDryRun() {
		runtimetune.Deploying()
	}
	return s.ResourceProviderServer.Construct(ctx, req)
}

func (s instanceRecorder) Create(ctx context.Context, req *rpc.CreateRequest) (*rpc.CreateResponse, error) {
	runtimetune.Deploying()
	return s.ResourceProviderServer.Create(ctx, req)
}

func (s instanceRecorder) Update(ctx context.Context, req *rpc.UpdateRequest) (*rpc.UpdateResponse, error) {
	runtimetune.Deploying()
	return s.ResourceProviderServer.Update(ctx, req)
}

func (s instanceRecorder) Delete(ctx context.Context, req *rpc.DeleteRequest) (*emptypb.Empty, error) {
	runtimetune.Deploying()
	return s.ResourceProviderServer.Delete(ctx, req)
}

// SetProviderInstance records the ID of the provider resource this process
// serves, as Configure receives it.
func SetProviderInstance(id string) {
	instance.mu.Lock()
	defer instance.mu.Unlock()
	instance.id = id
}

// ProviderInstance is the ID SetProviderInstance recorded ("" before).
func ProviderInstance() string {
	instance.mu.Lock()
	defer instance.mu.Unlock()
	return instance.id
}
