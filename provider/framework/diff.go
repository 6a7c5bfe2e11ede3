package framework

import (
	"context"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
)

// Resource is infer.Resource for a resource with a Diff of its own, whose Diff
// requests skip the schema infer would build for nothing.
//
// infer (pulumi-go-provider v1.5.0) infer/resource.go
// derivedResourceController.Diff builds the resource's whole schema
// (GetSchema: registerTypes of inputs and outputs, getResourceSchema) on every
// Diff of a resource that has an Update, only to learn which inputs are
// replaceOnChanges, and then, when the resource has a Diff of its own (diff ->
// CustomDiff), calls that Diff without ever looking at what it learned. In a
// 60-node no-op preview that was about a tenth of the provider's CPU, with its
// garbage. A resource without an Update skips it (every change a replace, also
// unused by a Diff of its own), so the Diff requests go to a second controller
// of the same resource that offers infer its Create and Diff only: the same
// decoding of state and inputs (hydrateFromState, ende.Decode), the same
// call of the resource's Diff. Everything else (schema, token, Check, Create,
// Read, Update, Delete) is the ordinary controller's.
//
// Before that, a Diff whose state and inputs are plain values (unknowns
// included: the common case; DecodePlain) is decoded here and handed to the resource's
// Diff directly, as infer would hand it: infer's own decoding was the larger
// part of what remained of a Diff's cost.
//
// A resource that migrates state keeps infer's Diff unchanged: its Diff
// decodes the state through the migrations, which the second controller would
// have to offer too.
func Resource[R interface {
	infer.CustomResource[I, O]
	infer.CustomDiff[I, O]
}, I, O any](r R) infer.InferredResource {
	full := infer.Resource[R, I, O](r)
	if _, migrates := any(r).(infer.CustomStateMigrations[O]); migrates {
		return full
	}
	return diffVia[R, I, O]{InferredResource: full, r: r, diff: infer.Resource[diffOnly[R, I, O], I, O](diffOnly[R, I, O]{r: r})}
}

// diffVia is a resource's controller whose Diff is another's, or, when the
// state and inputs are plain values (DecodePlain), the resource's own Diff
// called as infer calls it (infer/resource.go diff, the CustomDiff case).
type diffVia[R interface {
	infer.CustomResource[I, O]
	infer.CustomDiff[I, O]
}, I, O any] struct {
	infer.InferredResource
	r    R
	diff infer.InferredResource
}

func (d diffVia[R, I, O]) Diff(ctx context.Context, req p.DiffRequest) (p.DiffResponse, error) {
	// infer's preparation of the inputs: ignoreChanges keep the state's
	// top-level value, the engine's version and internal __ keys go
	inputs := req.Inputs
	for _, ignored := range req.IgnoreChanges {
		if v, ok := req.State.GetOk(ignored); ok {
			inputs = inputs.Set(ignored, v)
		}
	}
	for k := range inputs.All {
		if k == "version" || strings.HasPrefix(k, "__") {
			inputs = inputs.Delete(k)
		}
	}
	olds, ok := DecodePlain[O](req.State)
	if !ok {
		return d.diff.Diff(ctx, req)
	}
	news, ok := DecodePlain[I](inputs)
	if !ok {
		return d.diff.Diff(ctx, req)
	}
	return d.r.Diff(ctx, infer.DiffRequest[I, O]{ID: req.ID, State: olds, Inputs: news})
}

// diffOnly offers infer a resource's Create (every resource must have one;
// never called here) and Diff, and no Update.
type diffOnly[R interface {
	infer.CustomResource[I, O]
	infer.CustomDiff[I, O]
}, I, O any] struct{ r R }

func (d diffOnly[R, I, O]) Create(ctx context.Context, req infer.CreateRequest[I]) (infer.CreateResponse[O], error) {
	return d.r.Create(ctx, req)
}

func (d diffOnly[R, I, O]) Diff(ctx context.Context, req infer.DiffRequest[I, O]) (infer.DiffResponse, error) {
	return d.r.Diff(ctx, req)
}
