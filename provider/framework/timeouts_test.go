package framework

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/blang/semver"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi-go-provider/integration"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

// deadlines records, per operation, how far off the context's deadline was
// when the probe resource ran ("none" as -1).
type deadlines struct {
	mu   sync.Mutex
	left map[string]time.Duration
}

func (d *deadlines) record(ctx context.Context, op string) {
	left := time.Duration(-1)
	if at, ok := ctx.Deadline(); ok {
		left = time.Until(at)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.left[op] = left
}

var seen = &deadlines{left: map[string]time.Duration{}}

type probe struct{}

type probeArgs struct {
	Size int `pulumi:"size"`
}

func (*probe) Create(ctx context.Context, req infer.CreateRequest[probeArgs]) (infer.CreateResponse[probeArgs], error) {
	seen.record(ctx, "create")
	return infer.CreateResponse[probeArgs]{ID: "probe", Output: req.Inputs}, nil
}

func (*probe) Update(ctx context.Context, req infer.UpdateRequest[probeArgs, probeArgs]) (infer.UpdateResponse[probeArgs], error) {
	seen.record(ctx, "update")
	return infer.UpdateResponse[probeArgs]{Output: req.Inputs}, nil
}

func (*probe) Delete(ctx context.Context, _ infer.DeleteRequest[probeArgs]) (infer.DeleteResponse, error) {
	seen.record(ctx, "delete")
	return infer.DeleteResponse{}, nil
}

// Pulumi's customTimeouts reach the resources as context deadlines through
// infer's own cancel middleware, which is why the provider no longer has a
// wrapper of its own for them. If a pulumi-go-provider upgrade stops doing
// this, this test fails and the wrapper must come back.
func TestCustomTimeoutsBecomeDeadlines(t *testing.T) {
	prov, err := infer.NewProviderBuilder().WithResources(infer.Resource(&probe{})).Build()
	if err != nil {
		t.Fatal(err)
	}
	s, err := integration.NewServer(t.Context(), "test", semver.MustParse("0.1.0"), integration.WithProvider(prov))
	if err != nil {
		t.Fatal(err)
	}
	urn := presource.URN("urn:pulumi:dev::proj::test:framework:probe::p")
	in := func(size float64) property.Map {
		return property.NewMap(map[string]property.Value{"size": property.New(size)})
	}

	for _, timeout := range []float64{0, 600} {
		if _, err := s.Create(p.CreateRequest{Urn: urn, Properties: in(1), Timeout: timeout}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Update(p.UpdateRequest{Urn: urn, ID: "probe", State: in(1), Inputs: in(2), Timeout: timeout}); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(p.DeleteRequest{Urn: urn, ID: "probe", Properties: in(2), Timeout: timeout}); err != nil {
			t.Fatal(err)
		}
		for _, op := range []string{"create", "update", "delete"} {
			left := seen.left[op]
			switch {
			case timeout == 0 && left != -1:
				t.Errorf("%s without customTimeouts: the context has a deadline %s away", op, left)
			case timeout > 0 && (left <= 0 || left > time.Duration(timeout)*time.Second):
				t.Errorf("%s with a %.0f s customTimeout: the context's deadline is %s away (-1: none)", op, timeout, left)
			}
		}
	}
}
