package framework

import (
	"context"
	"fmt"
	"slices"

	p "github.com/pulumi/pulumi-go-provider"
	pschema "github.com/pulumi/pulumi/pkg/v3/codegen/schema"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

// InputsOnly names, per resource token, inputs that the resource's state
// (its outputs) does not keep although its State type has them (infer
// derives a resource's outputs from a State that embeds its Args): copies
// of an input that no operation needs from the state, because the engine
// hands every one of them the inputs. The CLI writes the whole state after
// every step of an update and of a preview (pulumi pkg/backend/snapshot.go)
// and sends each resource's state back in Check, Diff and every child
// registration's answer, so a copy is paid many times per command.
//
// The resource's code is unchanged: before its Diff, Update, Delete and Read
// the keys are put back into the state from the inputs of the request (old
// inputs for Diff, Update and Delete, the current ones for a refresh's Read),
// and they are taken out of what Create, Update and Read return. A state
// written while the copies were kept still holds them: where the request
// carries the inputs they win (the same values, barring a state edited by
// hand), and the next update or refresh drops them.
//
// The engine sends old inputs to Diff and Update (pulumi v3.74,
// pulumi/pulumi#13139) and to Delete (v3.89, pulumi/pulumi#14051; v3.120.0
// sent the state instead, pulumi/pulumi#16440), and the current inputs to
// Read during a refresh (pulumi/pulumi-go-provider provider.go ReadRequest).
type InputsOnly map[string][]string

// Schema takes the keys out of each resource's output properties.
func (io InputsOnly) Schema() SchemaFix {
	return func(spec *pschema.PackageSpec) error {
		for token, keys := range io {
			res, ok := spec.Resources[token]
			if !ok {
				return fmt.Errorf("InputsOnly: the schema has no resource %s", token)
			}
			for _, k := range keys {
				_, in := res.InputProperties[k]
				_, out := res.Properties[k]
				if !in || !out {
					return fmt.Errorf("InputsOnly: %s is not both an input and an output of %s", k, token)
				}
				delete(res.Properties, k)
				res.Required = slices.DeleteFunc(res.Required, func(s string) bool { return s == k })
			}
			spec.Resources[token] = res
		}
		return nil
	}
}

// Wrap puts the keys back into the state of the requests that read it and
// takes them out of the states the provider returns.
func (io InputsOnly) Wrap(prov p.Provider) p.Provider {
	if len(io) == 0 {
		return prov
	}
	if f := prov.Create; f != nil {
		prov.Create = func(ctx context.Context, req p.CreateRequest) (p.CreateResponse, error) {
			resp, err := f(ctx, req)
			resp.Properties = without(resp.Properties, io[string(req.Urn.Type())])
			return resp, err
		}
	}
	if f := prov.Update; f != nil {
		prov.Update = func(ctx context.Context, req p.UpdateRequest) (p.UpdateResponse, error) {
			keys := io[string(req.Urn.Type())]
			req.State = withInputs(req.State, req.OldInputs, keys)
			resp, err := f(ctx, req)
			resp.Properties = without(resp.Properties, keys)
			return resp, err
		}
	}
	if f := prov.Diff; f != nil {
		prov.Diff = func(ctx context.Context, req p.DiffRequest) (p.DiffResponse, error) {
			req.State = withInputs(req.State, req.OldInputs, io[string(req.Urn.Type())])
			return f(ctx, req)
		}
	}
	if f := prov.Delete; f != nil {
		prov.Delete = func(ctx context.Context, req p.DeleteRequest) error {
			keys := io[string(req.Urn.Type())]
			req.Properties = withInputs(req.Properties, req.OldInputs, keys)
			for _, k := range keys {
				if _, ok := req.Properties.GetOk(k); !ok {
					return fmt.Errorf("deleting %s: the Pulumi CLI sent neither %s nor the resource's inputs, which "+
						"the state does not keep: run the destroy with Pulumi CLI v3.89 or later (not v3.120.0)", req.Urn, k)
				}
			}
			return f(ctx, req)
		}
	}
	if f := prov.Read; f != nil {
		prov.Read = func(ctx context.Context, req p.ReadRequest) (p.ReadResponse, error) {
			keys := io[string(req.Urn.Type())]
			req.Properties = withInputs(req.Properties, req.Inputs, keys)
			resp, err := f(ctx, req)
			resp.Properties = without(resp.Properties, keys)
			return resp, err
		}
	}
	return prov
}

// withInputs is state with each key the inputs hold set to their value.
func withInputs(state, inputs property.Map, keys []string) property.Map {
	for _, k := range keys {
		if v, ok := inputs.GetOk(k); ok {
			state = state.Set(k, v)
		}
	}
	return state
}

// without is state without keys.
func without(state property.Map, keys []string) property.Map {
	if len(keys) == 0 || state.Len() == 0 {
		return state
	}
	return state.Delete(keys...)
}
