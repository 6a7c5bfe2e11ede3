package framework

import (
	"context"
	"testing"

	"github.com/blang/semver"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi-go-provider/integration"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

type diffedArgs struct {
	Name string `pulumi:"name"`
	Size int    `pulumi:"size,optional"`
}

// diffedArgsAnnotations counts the runs of diffedArgs' Annotate: infer runs it
// whenever it builds the resource's schema (not cached here, unlike Annotate).
var diffedArgsAnnotations int

func (a *diffedArgs) Annotate(an infer.Annotator) {
	diffedArgsAnnotations++
	an.Describe(&a.Size, "The size.")
}

type diffedState struct {
	diffedArgs
	Serial string `pulumi:"serial"`
}

// diffedResource has a Diff and an Update of its own; its Diff says what it
// was handed, so that a test sees the decoding.
type diffedResource struct{ updates *int }

func (*diffedResource) Annotate(an infer.Annotator) { an.SetToken("index", "Diffed") }

func (*diffedResource) Create(_ context.Context, req infer.CreateRequest[diffedArgs]) (infer.CreateResponse[diffedState], error) {
	return infer.CreateResponse[diffedState]{ID: "d1", Output: diffedState{diffedArgs: req.Inputs, Serial: "s1"}}, nil
}

func (r *diffedResource) Update(_ context.Context, req infer.UpdateRequest[diffedArgs, diffedState]) (infer.UpdateResponse[diffedState], error) {
	*r.updates++
	return infer.UpdateResponse[diffedState]{Output: diffedState{diffedArgs: req.Inputs, Serial: req.State.Serial}}, nil
}

func (*diffedResource) Diff(_ context.Context, req infer.DiffRequest[diffedArgs, diffedState]) (infer.DiffResponse, error) {
	d := map[string]p.PropertyDiff{}
	if req.State.Name != req.Inputs.Name {
		d["name"] = p.PropertyDiff{Kind: p.UpdateReplace, InputDiff: true}
	}
	if req.State.Size != req.Inputs.Size {
		d["size"] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
	}
	if req.State.Serial != "s1" { // the state was decoded, outputs too
		d["serial"] = p.PropertyDiff{Kind: p.Update}
	}
	return infer.DiffResponse{HasChanges: len(d) > 0, DetailedDiff: d}, nil
}

// A resource's Diff, reached through Resource, answers as through
// infer.Resource, without infer building the resource's schema (which it
// does, with infer.Resource, in every Diff of a resource with an Update); its
// Update is still the resource's.
func TestResourceDiffSkipsTheSchema(t *testing.T) {
	const urn = presource.URN("urn:pulumi:s::p::proxmoxtalos:index:Diffed::d")
	state := property.NewMap(map[string]property.Value{
		"name": property.New("a"), "size": property.New(2.0), "serial": property.New("s1"),
	})
	cases := []struct {
		inputs property.Map
		want   map[string]p.DiffKind
		ignore []string
	}{
		{property.NewMap(map[string]property.Value{"name": property.New("a"), "size": property.New(2.0)}), map[string]p.DiffKind{}, nil},
		{property.NewMap(map[string]property.Value{"name": property.New("a"), "size": property.New(3.0)}), map[string]p.DiffKind{"size": p.Update}, nil},
		{property.NewMap(map[string]property.Value{"name": property.New("b"), "size": property.New(2.0)}), map[string]p.DiffKind{"name": p.UpdateReplace}, nil},
		// the engine's version and internal keys are no inputs; an ignored
		// change keeps the state's value (decoded here, not by infer)
		{property.NewMap(map[string]property.Value{"name": property.New("a"), "size": property.New(3.0).WithSecret(true),
			"version": property.New("1.0.0"), "__defaults": property.New([]property.Value{})}), map[string]p.DiffKind{"size": p.Update}, nil},
		{property.NewMap(map[string]property.Value{"name": property.New("a"), "size": property.New(3.0)}), map[string]p.DiffKind{}, []string{"size"}},
		// an unknown input: infer decodes it (as "")
		{property.NewMap(map[string]property.Value{"name": property.New(property.Computed), "size": property.New(2.0)}), map[string]p.DiffKind{"name": p.UpdateReplace}, nil},
	}
	for _, ours := range []bool{false, true} {
		updates := 0
		res := infer.Resource(&diffedResource{updates: &updates})
		if ours {
			res = Resource(&diffedResource{updates: &updates})
		}
		prov := infer.Provider(infer.Options{Resources: []infer.InferredResource{res}})
		s, err := integration.NewServer(t.Context(), "test", semver.MustParse("0.1.0"), integration.WithProvider(prov))
		if err != nil {
			t.Fatal(err)
		}
		before := diffedArgsAnnotations
		for _, c := range cases {
			got, err := s.Diff(p.DiffRequest{Urn: urn, ID: "d1", State: state, Inputs: c.inputs, IgnoreChanges: c.ignore})
			if err != nil {
				t.Fatalf("framework.Resource %v: Diff: %v", ours, err)
			}
			if got.HasChanges != (len(c.want) > 0) || len(got.DetailedDiff) != len(c.want) {
				t.Errorf("framework.Resource %v: Diff of %v = %+v, want %v", ours, c.inputs, got, c.want)
			}
			for k, kind := range c.want {
				if got.DetailedDiff[k].Kind != kind {
					t.Errorf("framework.Resource %v: Diff of %v: %s is %v, want %v", ours, c.inputs, k, got.DetailedDiff[k].Kind, kind)
				}
			}
		}
		annotated := diffedArgsAnnotations - before
		switch {
		case ours && annotated != 0:
			t.Errorf("through Resource, %d Diffs built the schema %d times; want none", len(cases), annotated)
		case !ours && annotated == 0:
			t.Errorf("through infer.Resource, %d Diffs never built the schema: infer no longer does, and Resource may be deleted", len(cases))
		}
		if _, err := s.Update(p.UpdateRequest{Urn: urn, ID: "d1", State: state, Inputs: cases[1].inputs}); err != nil || updates != 1 {
			t.Errorf("framework.Resource %v: Update: %v, %d calls of the resource's Update; want 1", ours, err, updates)
		}
	}
}
