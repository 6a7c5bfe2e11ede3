package framework

import (
	"context"
	"slices"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

// echoingCreate returns every input as an output, as infer does, plus an
// unknown vmId and a status.
func echoingCreate(_ context.Context, req p.CreateRequest) (p.CreateResponse, error) {
	out := req.Properties.Set("vmId", property.New(property.Computed)).Set("status", property.New(property.Computed))
	return p.CreateResponse{ID: "r", Properties: out}, nil
}

func echoInputs() property.Map {
	return property.NewMap(map[string]property.Value{
		"node": property.New("pve1"),
		"cpu":  property.New(property.NewMap(map[string]property.Value{"cores": property.New(2.0)})),
		"cfg":  property.New("c").WithSecret(true),
		"tags": property.New(property.NewArray([]property.Value{property.New("a")})),
		"name": property.New("n"),
	})
}

func createKeys(t *testing.T, prov p.Provider, urn presource.URN, dryRun bool) []string {
	t.Helper()
	resp, err := prov.Create(context.Background(), p.CreateRequest{Urn: urn, Properties: echoInputs(), DryRun: dryRun})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range resp.Properties.AllStable {
		keys = append(keys, k)
	}
	return keys
}

// A registered child's preview Create drops the outputs that repeat its
// inputs but those the component reads (KeepOutputs); an up's Create, a
// resource never registered by a component (also one the program parents
// to the component itself), a type whose outputs the component reads all,
// and any Create while Full says so, keep every output.
func TestPreviewEchoesTrimsOnlyRegisteredChildsPreview(t *testing.T) {
	KeepOutputs("echo:m:Child", []string{"vmId", "name"})
	full := false
	prov := PreviewEchoes{Full: func() bool { return full }}.Wrap(p.Provider{Create: echoingCreate})
	child := presource.URN("urn:pulumi:s::p::echo:index:Comp$echo:m:Child::c")
	nested := presource.URN("urn:pulumi:s::p::x:y:Outer$echo:index:Comp$echo:m:Child::c")
	unnamed := presource.URN("urn:pulumi:s::p::echo:index:Comp$echo:m:Unnamed::c")
	for _, u := range []presource.URN{child, nested, unnamed} {
		RegisterEcho(u)
	}
	all := []string{"cfg", "cpu", "name", "node", "status", "tags", "vmId"}
	trimmed := []string{"name", "status", "vmId"}
	for _, c := range []struct {
		what   string
		urn    presource.URN
		dryRun bool
		full   bool
		want   []string
	}{
		{"a child's preview", child, true, false, trimmed},
		{"a nested component's child's preview", nested, true, false, trimmed},
		{"a child's up", child, false, false, all},
		{"a child's preview with Full", child, true, true, all},
		{"a program's own resource parented to the component", "urn:pulumi:s::p::echo:index:Comp$echo:m:Child::extra", true, false, all},
		{"a top-level resource's preview", "urn:pulumi:s::p::echo:m:Child::c", true, false, all},
		{"a type the component reads whole", unnamed, true, false, all},
	} {
		full = c.full
		if got := createKeys(t, prov, c.urn, c.dryRun); !slices.Equal(got, c.want) {
			t.Errorf("%s: outputs %v, want %v", c.what, got, c.want)
		}
	}
}

// An output that differs from its input (a value the provider computed) is
// no echo, and stays.
func TestPreviewEchoesKeepsChangedOutputs(t *testing.T) {
	KeepOutputs("echo:m:Changed", nil)
	RegisterEcho("urn:pulumi:s::p::echo:index:Comp$echo:m:Changed::c")
	prov := PreviewEchoes{}.Wrap(p.Provider{Create: func(ctx context.Context, req p.CreateRequest) (p.CreateResponse, error) {
		resp, err := echoingCreate(ctx, req)
		resp.Properties = resp.Properties.Set("node", property.New("pve2")).Set("cfg", property.New("c"))
		return resp, err
	}})
	got := createKeys(t, prov, "urn:pulumi:s::p::echo:index:Comp$echo:m:Changed::c", true)
	if want := []string{"cfg", "node", "status", "vmId"}; !slices.Equal(got, want) {
		t.Errorf("outputs %v, want %v (cfg lost its secrecy: no echo)", got, want)
	}
}
