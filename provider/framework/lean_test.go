package framework

import (
	"context"
	"net"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	rpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// recordingServer keeps the last Check and Diff request it was sent.
type recordingServer struct {
	rpc.UnimplementedResourceProviderServer
	check *rpc.CheckRequest
	diff  *rpc.DiffRequest
}

func (s *recordingServer) Check(_ context.Context, req *rpc.CheckRequest) (*rpc.CheckResponse, error) {
	s.check = req
	return &rpc.CheckResponse{}, nil
}

func (s *recordingServer) Diff(_ context.Context, req *rpc.DiffRequest) (*rpc.DiffResponse, error) {
	s.diff = req
	return &rpc.DiffResponse{}, nil
}

func (s *recordingServer) DiffConfig(_ context.Context, req *rpc.DiffRequest) (*rpc.DiffResponse, error) {
	s.diff = req
	return &rpc.DiffResponse{}, nil
}

// serveRecording serves a recordingServer over gRPC on loopback, as the
// engine reaches the provider, and returns a client of it.
func serveRecording(t *testing.T) (*recordingServer, rpc.ResourceProviderClient) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	rec := &recordingServer{}
	rpc.RegisterResourceProviderServer(srv, rec)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return rec, rpc.NewResourceProviderClient(conn)
}

func props(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A Check arrives without the old outputs nothing reads, every other field
// as sent.
func TestChecksArriveWithoutOldOutputs(t *testing.T) {
	rec, client := serveRecording(t)
	sent := &rpc.CheckRequest{
		Urn: "urn:pulumi:s::p::test:index:Lean::c", Type: "test:index:Lean", Name: "c",
		Olds:       props(t, map[string]any{"a": "old"}),
		News:       props(t, map[string]any{"a": "new", "l": []any{"x", 1.0}}),
		OldOutputs: props(t, map[string]any{"a": "old", "out": "o"}),
		RandomSeed: []byte{1, 2, 3},
	}
	if _, err := client.Check(context.Background(), sent); err != nil {
		t.Fatal(err)
	}
	want := proto.Clone(sent).(*rpc.CheckRequest)
	want.OldOutputs = nil
	if !proto.Equal(rec.check, want) {
		t.Errorf("Check arrived as\n%v\nwant\n%v", rec.check, want)
	}
}

// A Diff arrives without its old inputs once its type's Diff went through
// Resource's own controller (whose Diff has none), but for the keys
// InputsOnly puts back into its state; before that, for other types and
// for DiffConfig (ConfigDiff reads them) with them.
func TestDiffsOfOwnDiffsArriveWithoutOldInputs(t *testing.T) {
	rec, client := serveRecording(t)
	diff := func(typ, urn string) *rpc.DiffRequest {
		return &rpc.DiffRequest{
			Id: "id", Urn: urn, Type: typ, Name: "c", IgnoreChanges: []string{"x"},
			Olds:      props(t, map[string]any{"a": "state"}),
			News:      props(t, map[string]any{"a": "new"}),
			OldInputs: props(t, map[string]any{"a": "old"}),
		}
	}
	own := diff("test:index:OwnDiff", "urn:pulumi:s::p::test:index:OwnDiff::c")
	config := diff("pulumi:providers:test", "urn:pulumi:s::p::pulumi:providers:test::default")
	send := func(req *rpc.DiffRequest, keeps bool) {
		t.Helper()
		call := client.Diff
		if req == config {
			call = client.DiffConfig
		}
		if _, err := call(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		want := proto.Clone(req).(*rpc.DiffRequest)
		if !keeps {
			want.OldInputs = nil
		}
		if !proto.Equal(rec.diff, want) {
			t.Errorf("%s arrived as\n%v\nwant\n%v", req.GetType(), rec.diff, want)
		}
	}
	send(own, true) // no Diff of the type went through Resource yet
	urn := presource.URN(own.GetUrn())
	if _, err := Resource(&benchResource{}).Diff(context.Background(), p.DiffRequest{Urn: urn, State: benchInputs(), Inputs: benchInputs()}); err != nil {
		t.Fatal(err)
	}
	send(own, false)
	send(config, true)
	send(diff("test:index:Other", "urn:pulumi:s::p::test:index:Other::c"), true)

	// a type whose state InputsOnly completes from the old inputs keeps
	// those keys of them, and only those
	copies := diff("test:index:Copies", "urn:pulumi:s::p::test:index:Copies::c")
	copies.OldInputs = props(t, map[string]any{"copy": "old", "other": "x"})
	InputsOnly{"test:index:Copies": {"copy"}}.Wrap(p.Provider{Diff: func(context.Context, p.DiffRequest) (p.DiffResponse, error) {
		return p.DiffResponse{}, nil
	}})
	if _, err := Resource(&benchResource{}).Diff(context.Background(), p.DiffRequest{
		Urn: presource.URN(copies.GetUrn()), State: benchInputs(), Inputs: benchInputs()}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Diff(context.Background(), copies); err != nil {
		t.Fatal(err)
	}
	want := proto.Clone(copies).(*rpc.DiffRequest)
	delete(want.OldInputs.Fields, "other")
	if !proto.Equal(rec.diff, want) {
		t.Errorf("a Diff of a type with InputsOnly keys arrived as\n%v\nwant\n%v", rec.diff, want)
	}
}

// answeringMonitor answers every registration with answer.
type answeringMonitor struct {
	rpc.UnimplementedResourceMonitorServer
	answer *rpc.RegisterResourceResponse
}

func (m *answeringMonitor) RegisterResource(context.Context, *rpc.RegisterResourceRequest) (*rpc.RegisterResourceResponse, error) {
	return m.answer, nil
}

// The engine's answer to a registration reaches the component with only
// the outputs KeepOutputs named for its type, every other field as sent; a
// type never named keeps all of them.
func TestRegistrationsKeepTheOutputsNamed(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	mon := &answeringMonitor{}
	rpc.RegisterResourceMonitorServer(srv, mon)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	client := rpc.NewResourceMonitorClient(conn)

	KeepOutputs("test:index:Kept", []string{"vmId"})
	KeepOutputs("test:index:Kept", []string{"secret"}) // adds
	answer := func(urn string) *rpc.RegisterResourceResponse {
		return &rpc.RegisterResourceResponse{
			Urn: urn, Id: "id-1", Stable: true, Stables: []string{"vmId"}, Result: rpc.Result_SUCCESS,
			PropertyDependencies: map[string]*rpc.RegisterResourceResponse_PropertyDependencies{"vmId": {Urns: []string{"urn:x"}}},
			Object: props(t, map[string]any{
				"vmId": 101.0, "config": "a long configuration", "list": []any{"a", map[string]any{"vmId": 1.0}},
				"secret": map[string]any{"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "value": "s"},
			}),
		}
	}
	for _, c := range []struct {
		urn  string
		kept []string
	}{
		{"urn:pulumi:s::p::proxmoxtalos:index:TalosCluster$test:index:Kept::n1", []string{"secret", "vmId"}},
		{"urn:pulumi:s::p::test:index:Kept::n2", []string{"secret", "vmId"}},
		{"urn:pulumi:s::p::test:index:Other::n3", nil},
	} {
		mon.answer = answer(c.urn)
		got, err := client.RegisterResource(context.Background(), &rpc.RegisterResourceRequest{})
		if err != nil {
			t.Fatal(err)
		}
		want := proto.Clone(mon.answer).(*rpc.RegisterResourceResponse)
		if c.kept != nil {
			for k := range want.GetObject().GetFields() {
				if k != c.kept[0] && k != c.kept[1] {
					delete(want.Object.Fields, k)
				}
			}
		}
		if !proto.Equal(got, want) {
			t.Errorf("%s: the answer arrived as\n%v\nwant\n%v", c.urn, got, want)
		}
	}
}
