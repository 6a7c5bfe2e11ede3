package framework

import (
	"context"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// Every resource request's handler finds its resource's URN in the context.
func TestWithURNHandsOnTheURN(t *testing.T) {
	seen := map[string]presource.URN{}
	prov := WithURN(p.Provider{
		Check: func(ctx context.Context, _ p.CheckRequest) (p.CheckResponse, error) {
			seen["check"] = URN(ctx)
			return p.CheckResponse{}, nil
		},
		Create: func(ctx context.Context, _ p.CreateRequest) (p.CreateResponse, error) {
			seen["create"] = URN(ctx)
			return p.CreateResponse{}, nil
		},
		Delete: func(ctx context.Context, _ p.DeleteRequest) error {
			seen["delete"] = URN(ctx)
			return nil
		},
	})
	const urn = presource.URN("urn:pulumi:s::p::proxmoxtalos:index:TalosCluster$proxmoxtalos:talos:ConfigurationApply::n1")
	ctx := t.Context()
	_, _ = prov.Check(ctx, p.CheckRequest{Urn: urn})
	_, _ = prov.Create(ctx, p.CreateRequest{Urn: urn})
	_ = prov.Delete(ctx, p.DeleteRequest{Urn: urn})
	for _, op := range []string{"check", "create", "delete"} {
		if seen[op] != urn {
			t.Errorf("%s saw URN %q, want %q", op, seen[op], urn)
		}
	}
	if prov.Update != nil || prov.Read != nil {
		t.Error("WithURN added handlers the provider did not have")
	}
	if got := URN(ctx); got != "" {
		t.Errorf("URN outside a request = %q, want empty", got)
	}
}
