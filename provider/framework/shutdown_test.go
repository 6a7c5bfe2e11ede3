package framework

import (
	"context"
	"errors"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// A construct the engine stopped ends quietly; any other error is kept.
func TestQuietShutdown(t *testing.T) {
	t.Parallel()
	urn := presource.URN("urn:pulumi:test::proj::" + "proxmoxtalos:index:TalosCluster::lab")
	for _, tc := range []struct {
		err   string
		quiet bool
	}{
		{`marshaling properties: awaiting input property "kubeconfig": rpc error: code = Canceled desc = context canceled`, true},
		{"grpc: the client connection is closing", true},
		{"waiting for RPCs: resource monitor shut down while waiting for construct to complete", true},
		{"TalosCluster lab: network.subnet: the node subnet is required", false},
	} {
		construct := quietShutdown(func(context.Context, p.ConstructRequest) (p.ConstructResponse, error) {
			return p.ConstructResponse{}, errors.New(tc.err)
		})
		resp, err := construct(context.Background(), p.ConstructRequest{Urn: urn})
		if quiet := err == nil; quiet != tc.quiet {
			t.Errorf("%q: error %v, want quiet=%v", tc.err, err, tc.quiet)
		}
		if tc.quiet && resp.Urn != urn {
			t.Errorf("%q: quiet response for %q", tc.err, resp.Urn)
		}
	}
}
