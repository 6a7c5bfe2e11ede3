package framework

import (
	"context"
	"strings"
	"testing"

	"github.com/blang/semver"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi-go-provider/integration"
)

type annotatedArgs struct {
	Name  string  `pulumi:"name"`
	Size  *int    `pulumi:"size,optional"`
	Notes *string `pulumi:"notes,optional"`
}

// annotateRuns counts the runs of annotatedArgs' Annotate body.
var annotateRuns int

func (a *annotatedArgs) Annotate(an infer.Annotator) {
	Annotate(an, a, func() {
		annotateRuns++
		an.Describe(a, "The arguments.")
		an.Describe(&a.Name, "The name.")
		an.Describe(&a.Size, "The size.")
		an.SetDefault(&a.Size, 3)
		an.Describe(&a.Notes, "Notes.")
	})
}

type annotatedResource struct{}

func (*annotatedResource) Annotate(an infer.Annotator) {
	an.SetToken("index", "Annotated")
}

func (*annotatedResource) Create(_ context.Context, req infer.CreateRequest[annotatedArgs]) (infer.CreateResponse[annotatedArgs], error) {
	return infer.CreateResponse[annotatedArgs]{ID: "x", Output: req.Inputs}, nil
}

// The schema infer builds from a replayed annotation is the one the first
// run recorded (descriptions and defaults), and the body runs once.
func TestAnnotateReplaysTheFirstRecord(t *testing.T) {
	schema := func() string {
		prov := infer.Provider(infer.Options{Resources: []infer.InferredResource{infer.Resource(&annotatedResource{})}})
		s, err := integration.NewServer(t.Context(), "test", semver.MustParse("0.1.0"), integration.WithProvider(prov))
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.GetSchema(p.GetSchemaRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Schema
	}
	first := schema()
	runs := annotateRuns
	for range 3 {
		if again := schema(); again != first {
			t.Fatalf("schema from the replayed annotation differs:\n%s\nfirst:\n%s", again, first)
		}
	}
	if runs == 0 || annotateRuns != runs {
		t.Errorf("Annotate body ran %d times for the first schema and %d in all; want it to run for the first only", runs, annotateRuns)
	}
	for _, want := range []string{`"The size."`, `"default":3`, `"Notes."`} {
		if !strings.Contains(first, want) {
			t.Errorf("schema lacks %s:\n%s", want, first)
		}
	}
}
