package framework

import (
	"context"
	"errors"
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

type guardKey struct{}

// A guard prepares only its component's constructs: the others reach
// infer as they came. Its refusal stops the construct, and Scrub sees the
// context Prepare returned.
func TestConstructGuardsApplyToTheirComponentOnly(t *testing.T) {
	t.Parallel()
	var got []string
	prov := WithConstructGuards(p.Provider{Construct: func(ctx context.Context, req p.ConstructRequest) (p.ConstructResponse, error) {
		got = append(got, req.Inputs.Get("x").AsString())
		if v, _ := ctx.Value(guardKey{}).(string); v != "" {
			return p.ConstructResponse{}, errors.New("failed with " + v)
		}
		return p.ConstructResponse{Urn: req.Urn}, nil
	}}, ConstructGuard{
		Token: "pkg:index:Guarded",
		Prepare: func(ctx context.Context, req p.ConstructRequest) (context.Context, p.ConstructRequest, error) {
			if req.Inputs.Get("x").AsString() == "refuse" {
				return ctx, req, errors.New("x refused")
			}
			req.Inputs = req.Inputs.Set("x", property.New("prepared"))
			return context.WithValue(ctx, guardKey{}, "s3cret"), req, nil
		},
		Scrub: func(ctx context.Context, err error) error {
			return errors.New(strings.ReplaceAll(err.Error(), ctx.Value(guardKey{}).(string), "(secret)"))
		},
	})
	in := func(x string) property.Map { return property.NewMap(map[string]property.Value{"x": property.New(x)}) }
	guarded := presource.URN("urn:pulumi:s::p::pkg:index:Guarded::a")
	other := presource.URN("urn:pulumi:s::p::pkg:index:Other::b")

	if _, err := prov.Construct(context.Background(), p.ConstructRequest{Urn: other, Inputs: in("raw")}); err != nil {
		t.Fatal(err)
	}
	_, err := prov.Construct(context.Background(), p.ConstructRequest{Urn: guarded, Inputs: in("raw")})
	if err == nil || err.Error() != "failed with (secret)" {
		t.Errorf("guarded construct error %v, want the scrubbed one", err)
	}
	if _, err := prov.Construct(context.Background(), p.ConstructRequest{Urn: guarded, Inputs: in("refuse")}); err == nil || err.Error() != "x refused" {
		t.Errorf("refused construct: %v", err)
	}
	if want := []string{"raw", "prepared"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("constructs saw %v, want %v", got, want)
	}
}

// Only a preview of the named resource whose When holds gets unknowns;
// a secret output's unknown stays secret.
func TestPreviewUnknownsOnlyWhenDue(t *testing.T) {
	t.Parallel()
	prov := WithPreviewUnknowns(p.Provider{Update: func(_ context.Context, req p.UpdateRequest) (p.UpdateResponse, error) {
		return p.UpdateResponse{Properties: property.NewMap(map[string]property.Value{
			"cert": property.New("old").WithSecret(true), "expiry": property.New("2027"),
		})}, nil
	}}, PreviewUnknowns{
		Token:   "pkg:mod:Secrets",
		When:    func(state, _ property.Map) bool { return state.Get("due").AsBool() },
		Outputs: []PreviewOutput{{Name: "cert", Secret: true}, {Name: "expiry"}},
	})
	due := property.NewMap(map[string]property.Value{"due": property.New(true)})
	notDue := property.NewMap(map[string]property.Value{"due": property.New(false)})
	for _, tc := range []struct {
		name    string
		urn     presource.URN
		state   property.Map
		dryRun  bool
		unknown bool
	}{
		{"due preview", "urn:pulumi:s::p::pkg:mod:Secrets::a", due, true, true},
		{"due update", "urn:pulumi:s::p::pkg:mod:Secrets::a", due, false, false},
		{"not due", "urn:pulumi:s::p::pkg:mod:Secrets::a", notDue, true, false},
		{"other type", "urn:pulumi:s::p::pkg:mod:Other::a", due, true, false},
	} {
		resp, err := prov.Update(context.Background(), p.UpdateRequest{Urn: tc.urn, State: tc.state, DryRun: tc.dryRun})
		if err != nil {
			t.Fatal(err)
		}
		cert, expiry := resp.Properties.Get("cert"), resp.Properties.Get("expiry")
		if cert.IsComputed() != tc.unknown || expiry.IsComputed() != tc.unknown {
			t.Errorf("%s: cert %v expiry %v, want unknown=%v", tc.name, cert, expiry, tc.unknown)
		}
		if !cert.Secret() || (tc.unknown && expiry.Secret()) {
			t.Errorf("%s: cert secret=%v expiry secret=%v", tc.name, cert.Secret(), expiry.Secret())
		}
	}
}
