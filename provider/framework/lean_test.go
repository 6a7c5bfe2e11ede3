package framework

import (
	"context"
	"net"
	"testing"

	rpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

func props(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
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

	forgetKeptOutputs(t, "test:index:Kept")
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

// forgetKeptOutputs drops what KeepOutputs holds for token, now and when
// the test ends, so that a test run again (-count) starts from nothing.
func forgetKeptOutputs(t *testing.T, token string) {
	t.Helper()
	forget := func() {
		keptOutputs.Lock()
		defer keptOutputs.Unlock()
		delete(keptOutputs.byType, token)
	}
	forget()
	t.Cleanup(forget)
}

// What leanCodec's trimming relies on, held here so that a go.mod bump that
// breaks it fails a test instead of silently handing a reader less.
func TestLeanCodecAssumptions(t *testing.T) {
	// another package's init registering a "proto" codec after this one
	// would silently undo the trimming (package provider checks the same
	// over the binary's imports)
	if !LeanCodecActive() {
		t.Errorf("gRPC's \"proto\" codec is %T, not leanCodec: a package initialised later replaced it; register leanCodec after it (lean.go)",
			encoding.GetCodecV2("proto"))
	}
	// the field numbers withKeptOutputs and keptFields read
	fieldNumbers := []struct {
		msg  proto.Message
		name string
		want int
	}{
		{&rpc.RegisterResourceResponse{}, "urn", int(registeredURN)},
		{&rpc.RegisterResourceResponse{}, "object", int(registeredObject)},
		{&structpb.Struct{}, "fields", int(structFields)},
	}
	for _, f := range fieldNumbers {
		d := f.msg.ProtoReflect().Descriptor()
		fd := d.Fields().ByName(protoreflect.Name(f.name))
		if fd == nil || int(fd.Number()) != f.want {
			t.Errorf("%s.%s is not field %d: update the numbers in lean.go", d.FullName(), f.name, f.want)
		}
	}
	if n := (&structpb.Struct{}).ProtoReflect().Descriptor().Fields().ByName("fields").MapKey().Number(); int(n) != int(mapEntryKey) {
		t.Errorf("a Struct's map entry key is field %d, not %d: update mapEntryKey in lean.go", n, mapEntryKey)
	}
	// what the Go SDK reads of the answer (the outputs its struct's tags
	// name, a catch-all empty tag, the raw outputs) is held by package
	// cluster's TestChildrenReadOnlyTheOutputsTheyName
}
