package framework

import (
	"context"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

type checkedArgs struct {
	Name   string            `pulumi:"name"`
	Token  string            `pulumi:"token" provider:"secret"`
	Tags   []string          `pulumi:"tags,optional"`
	Labels map[string]string `pulumi:"labels,optional"`
	View   *string           `pulumi:"view,optional"`
}

// checkedResource's Check sets view from name, as ConfigurationApply's
// derives its configView.
type checkedResource struct{}

func (*checkedResource) Annotate(an infer.Annotator) { an.SetToken("index", "Checked") }

func (*checkedResource) Create(context.Context, infer.CreateRequest[checkedArgs]) (infer.CreateResponse[checkedArgs], error) {
	return infer.CreateResponse[checkedArgs]{}, nil
}

func (*checkedResource) Diff(context.Context, infer.DiffRequest[checkedArgs, checkedArgs]) (infer.DiffResponse, error) {
	return infer.DiffResponse{}, nil
}

func (*checkedResource) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[checkedArgs], error) {
	a, fails, err := DecodeInputs[checkedArgs](ctx, req.NewInputs)
	view := "view of " + a.Name
	a.View = &view
	if a.Name == "" {
		fails = append(fails, p.CheckFailure{Property: "name", Reason: "must not be empty"})
	}
	return infer.CheckResponse[checkedArgs]{Inputs: a, Failures: fails}, err
}

// Resource's Check encodes the resource's result itself for plain inputs,
// and leaves inputs with dependencies to infer; either way the response is
// infer's.
func TestResourceCheckEncodesPlainInputsItself(t *testing.T) {
	urn := presource.NewURN("stack", "project", "", "index:Checked", "c")
	dep := presource.NewURN("stack", "project", "", "index:Other", "o")
	plain := property.NewMap(map[string]property.Value{
		"name":   property.New(""),
		"token":  property.New("t0k3n"), // secret by its tag
		"tags":   property.New([]property.Value{}),
		"labels": property.New(map[string]property.Value{"a": property.New("b").WithSecret(true)}),
	})
	withDeps := plain.Set("name", property.New("n").WithDependencies([]presource.URN{dep}))
	for _, c := range []struct {
		name   string
		inputs property.Map
		here   bool
	}{{"plain", plain, true}, {"dependencies", withDeps, false}} {
		before := checkedHere.Load()
		got, err := Resource(&checkedResource{}).Check(context.Background(), p.CheckRequest{Urn: urn, Inputs: c.inputs})
		if err != nil {
			t.Fatal(err)
		}
		if here := checkedHere.Load() > before; here != c.here {
			t.Errorf("%s: encoded here %v, want %v", c.name, here, c.here)
		}
		want, err := infer.Resource(&checkedResource{}).Check(context.Background(), p.CheckRequest{Urn: urn, Inputs: c.inputs})
		if err != nil {
			t.Fatal(err)
		}
		if !got.Inputs.Equals(want.Inputs) || len(got.Failures) != len(want.Failures) {
			t.Errorf("%s: Check gave %v %v, infer %v %v", c.name, got.Inputs, got.Failures, want.Inputs, want.Failures)
		}
	}
	// what infer's result holds, so that the comparison above means something
	got, _ := Resource(&checkedResource{}).Check(context.Background(), p.CheckRequest{Urn: urn, Inputs: plain})
	if tok := got.Inputs.Get("token"); !tok.Secret() || got.Inputs.Get("view").AsString() != "view of " ||
		!got.Inputs.Get("labels").AsMap().Get("a").Secret() || got.Inputs.Get("tags").AsArray().Len() != 0 || len(got.Failures) != 1 {
		t.Errorf("checked inputs %v, failures %v", got.Inputs, got.Failures)
	}
}

// A secret deeper than three steps stays secret where it was. infer
// (v1.5.0) can mark another value below the same parent instead: ende.walk
// builds each value's path by appending to its parent's path slice, which
// siblings share from three steps on, so a recorded path can be changed by
// the next sibling's.
func TestEncodeCheckedKeepsDeepSecretsInPlace(t *testing.T) {
	type leaf struct {
		Sizes map[string]int `pulumi:"sizes"`
	}
	type args struct {
		Items []leaf `pulumi:"items"`
	}
	sizes := map[string]property.Value{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
		sizes[k] = property.New(1.0)
	}
	sizes["c"] = sizes["c"].WithSecret(true)
	in := property.NewMap(map[string]property.Value{"items": property.New([]property.Value{
		property.New(map[string]property.Value{"sizes": property.New(sizes)}),
	})})
	checked, _ := DecodePlain[args](in)
	got, ok := EncodeChecked(checked, in)
	if !ok {
		t.Fatal("EncodeChecked declined plain inputs")
	}
	for k, v := range got.Get("items").AsArray().Get(0).AsMap().Get("sizes").AsMap().All {
		if v.Secret() != (k == "c") {
			t.Errorf("sizes.%s: secret %v", k, v.Secret())
		}
	}
}
