// Package enginetest is for tests: it runs a function under a request
// context made as the provider's gRPC server makes it (pulumi-go-provider's
// RawServer, whose context carries the engine's logger), against a fake
// engine that records what it is sent. A test asserts that a warning
// reaches the user, which the integration server (it logs through slog,
// whatever the context) cannot tell.
package enginetest

import (
	"context"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/integration/fake"
	comProvider "github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/structpb"
)

// URN is the resource the request of Run is about.
const URN = "urn:pulumi:test::test::proxmoxtalos:talos:ConfigurationApply::node"

// Run calls fn with the context of a Read request of URN and returns the
// lines the engine received (fn's and anything the provider logged).
func Run(t *testing.T, fn func(ctx context.Context)) []*pulumirpc.LogRequest {
	t.Helper()

	engine := fake.NewEngineServer()
	RunAgainst(t, engine, fn)

	return engine.Logs()
}

// RunAgainst is Run against the given engine (one that answers otherwise).
func RunAgainst(t *testing.T, engine pulumirpc.EngineServer, fn func(ctx context.Context)) {
	t.Helper()

	addr, _, err := fake.StartEngineServer(t.Context(), engine)
	if err != nil {
		t.Fatal(err)
	}

	host, err := comProvider.NewHostClient(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Close() })

	prov := p.Provider{Read: func(ctx context.Context, req p.ReadRequest) (p.ReadResponse, error) {
		fn(ctx)

		return p.ReadResponse{ID: req.ID}, nil
	}}

	srv, err := p.RawServer("proxmoxtalos", "0.0.1", prov)(host)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := srv.Read(t.Context(), &pulumirpc.ReadRequest{Id: "node", Urn: URN, Properties: &structpb.Struct{}}); err != nil {
		t.Fatal(err)
	}
}

// Messages are the texts of the lines of the given severity.
func Messages(logs []*pulumirpc.LogRequest, severity pulumirpc.LogSeverity) []string {
	var out []string
	for _, l := range logs {
		if l.GetSeverity() == severity {
			out = append(out, l.GetMessage())
		}
	}

	return out
}
