package framework

import (
	"context"
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	pschema "github.com/pulumi/pulumi/pkg/v3/codegen/schema"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

const copyURN = presource.URN("urn:pulumi:s::p::p:m:R::r")

var copies = InputsOnly{"p:m:R": {"creds"}}

func TestInputsOnlyLeavesOutputsOnly(t *testing.T) {
	spec := &pschema.PackageSpec{Resources: map[string]pschema.ResourceSpec{
		"p:m:R": resourceWith([]string{"node", "creds"}, "node", "creds", "digest"),
	}}
	res := spec.Resources["p:m:R"]
	res.Required = []string{"node", "creds", "digest"}
	spec.Resources["p:m:R"] = res
	if err := copies.Schema()(spec); err != nil {
		t.Fatal(err)
	}
	res = spec.Resources["p:m:R"]
	if _, ok := res.Properties["creds"]; ok || strings.Join(res.Required, ",") != "node,digest" {
		t.Errorf("creds is still an output: %v, required %v", res.Properties, res.Required)
	}
	if _, ok := res.InputProperties["creds"]; !ok {
		t.Error("creds is no longer an input")
	}
	if err := (InputsOnly{"p:m:R": {"digest"}}).Schema()(spec); err == nil || !strings.Contains(err.Error(), "digest") {
		t.Errorf("an output that is no input: want an error naming it, got %v", err)
	}
}

// statesSeen records the state each request handed the resource.
type statesSeen struct{ diff, update, del, read property.Map }

// copyingProvider is a resource whose state holds every input, as infer
// makes it: Create, Update and Read return creds in the state.
func copyingProvider(s *statesSeen) p.Provider {
	state := property.NewMap(map[string]property.Value{
		"node": property.New("10.0.0.1"), "creds": property.New("new").WithSecret(true), "digest": property.New("d"),
	})
	return p.Provider{
		Create: func(context.Context, p.CreateRequest) (p.CreateResponse, error) {
			return p.CreateResponse{ID: "r", Properties: state}, nil
		},
		Update: func(_ context.Context, req p.UpdateRequest) (p.UpdateResponse, error) {
			s.update = req.State
			return p.UpdateResponse{Properties: state}, nil
		},
		Diff: func(_ context.Context, req p.DiffRequest) (p.DiffResponse, error) {
			s.diff = req.State
			return p.DiffResponse{}, nil
		},
		Delete: func(_ context.Context, req p.DeleteRequest) error {
			s.del = req.Properties
			return nil
		},
		Read: func(_ context.Context, req p.ReadRequest) (p.ReadResponse, error) {
			s.read = req.Properties
			return p.ReadResponse{ID: "r", Properties: state, Inputs: req.Inputs}, nil
		},
	}
}

func credsOf(m property.Map) string {
	v := m.Get("creds")
	if !v.IsString() {
		return "<none>"
	}
	return v.AsString()
}

// The state the provider returns has no copy; every operation that reads a
// state finds it there again, from the request's inputs, whether the state
// is new (without the copy) or written before (with it).
func TestInputsOnlyPutsInputsBackIntoTheState(t *testing.T) {
	ctx := context.Background()
	var s statesSeen
	prov := copies.Wrap(copyingProvider(&s))

	created, err := prov.Create(ctx, p.CreateRequest{Urn: copyURN})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := created.Properties.GetOk("creds"); ok || created.Properties.Get("digest").AsString() != "d" {
		t.Fatalf("created state %v", created.Properties)
	}

	oldInputs := property.NewMap(map[string]property.Value{"node": property.New("10.0.0.1"), "creds": property.New("old").WithSecret(true)})
	withCopy := created.Properties.Set("creds", property.New("copy").WithSecret(true))
	for name, state := range map[string]property.Map{"new state": created.Properties, "state with a copy": withCopy} {
		s = statesSeen{}
		if _, err := prov.Diff(ctx, p.DiffRequest{Urn: copyURN, State: state, OldInputs: oldInputs}); err != nil {
			t.Fatal(err)
		}
		updated, err := prov.Update(ctx, p.UpdateRequest{Urn: copyURN, State: state, OldInputs: oldInputs})
		if err != nil {
			t.Fatal(err)
		}
		if err := prov.Delete(ctx, p.DeleteRequest{Urn: copyURN, Properties: state, OldInputs: oldInputs}); err != nil {
			t.Fatal(err)
		}
		read, err := prov.Read(ctx, p.ReadRequest{Urn: copyURN, Properties: state, Inputs: oldInputs})
		if err != nil {
			t.Fatal(err)
		}
		for op, got := range map[string]property.Map{"Diff": s.diff, "Update": s.update, "Delete": s.del, "Read": s.read} {
			if credsOf(got) != "old" || !got.Get("creds").Secret() || got.Get("digest").AsString() != "d" {
				t.Errorf("%s: %s got state %v, want the old inputs' creds (secret) and the state's digest", name, op, got)
			}
		}
		for op, got := range map[string]property.Map{"Update": updated.Properties, "Read": read.Properties} {
			if _, ok := got.GetOk("creds"); ok {
				t.Errorf("%s: %s returned a state with creds", name, op)
			}
		}
		if credsOf(read.Inputs) != "old" {
			t.Errorf("%s: Read's inputs lost creds: %v", name, read.Inputs)
		}
	}

	// A state with the copy and no inputs (a CLI that sends none) keeps its
	// own; without either, Delete says what to do.
	s = statesSeen{}
	if err := prov.Delete(ctx, p.DeleteRequest{Urn: copyURN, Properties: withCopy}); err != nil || credsOf(s.del) != "copy" {
		t.Errorf("Delete without inputs of a state with the copy: %v, creds %s", err, credsOf(s.del))
	}
	err = prov.Delete(ctx, p.DeleteRequest{Urn: copyURN, Properties: created.Properties})
	if err == nil || !strings.Contains(err.Error(), "creds") || !strings.Contains(err.Error(), "v3.89") {
		t.Errorf("Delete without inputs or copy: %v", err)
	}

	// Other resources keep their states as they are.
	other := presource.URN("urn:pulumi:s::p::p:m:Other::o")
	if got, _ := prov.Create(ctx, p.CreateRequest{Urn: other}); credsOf(got.Properties) != "new" {
		t.Errorf("another resource's state lost creds: %v", got.Properties)
	}
}
