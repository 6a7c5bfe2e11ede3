package framework

import (
	"context"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

// PreviewUnknowns marks outputs of one resource type unknown in the preview
// of an update that will change them although none of its inputs changed
// (a certificate renewal that falls due). infer v1.5.0 computes a preview's
// unknown outputs only from changed inputs (infer/resource.go,
// WireDependencies), so the preview would show the old value and leave out
// the resources that receive the new one. The resource's package says when.
type PreviewUnknowns struct {
	// Token is the resource's type token.
	Token string
	// When decides, from the raw state and the new inputs, that the update
	// will change Outputs.
	When func(state, inputs property.Map) bool
	// Outputs are the outputs the update changes then.
	Outputs []PreviewOutput
}

// PreviewOutput is one output PreviewUnknowns marks unknown.
type PreviewOutput struct {
	Name string
	// Secret: the output is a secret, and so is its unknown.
	Secret bool
}

// WithPreviewUnknowns applies rules to the provider's update previews.
func WithPreviewUnknowns(prov p.Provider, rules ...PreviewUnknowns) p.Provider {
	inner := prov.Update
	if inner == nil || len(rules) == 0 {
		return prov
	}
	prov.Update = func(ctx context.Context, req p.UpdateRequest) (p.UpdateResponse, error) {
		resp, err := inner(ctx, req)
		if err != nil || !req.DryRun {
			return resp, err
		}
		for _, r := range rules {
			if string(req.Urn.Type()) != r.Token || !r.When(req.State, req.Inputs) {
				continue
			}
			unknown := property.New(property.Computed)
			for _, o := range r.Outputs {
				resp.Properties = resp.Properties.Set(o.Name, unknown.WithSecret(o.Secret))
			}
		}
		return resp, nil
	}
	return prov
}
