package framework

import (
	"context"

	p "github.com/pulumi/pulumi-go-provider"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// urnKey carries the URN of the resource a request is about.
type urnKey struct{}

// WithURN hands every Check, Diff, Create, Read, Update and Delete the
// URN of its resource through the context (URN reads it): infer v1.5.0's
// typed requests (infer.CreateRequest and the others) carry only the
// resource's name, and the URN infer itself keeps in the context for its
// logger is under an internal key.
func WithURN(prov p.Provider) p.Provider {
	if f := prov.Check; f != nil {
		prov.Check = func(ctx context.Context, req p.CheckRequest) (p.CheckResponse, error) {
			return f(ContextWithURN(ctx, req.Urn), req)
		}
	}
	if f := prov.Diff; f != nil {
		prov.Diff = func(ctx context.Context, req p.DiffRequest) (p.DiffResponse, error) {
			return f(ContextWithURN(ctx, req.Urn), req)
		}
	}
	if f := prov.Create; f != nil {
		prov.Create = func(ctx context.Context, req p.CreateRequest) (p.CreateResponse, error) {
			return f(ContextWithURN(ctx, req.Urn), req)
		}
	}
	if f := prov.Read; f != nil {
		prov.Read = func(ctx context.Context, req p.ReadRequest) (p.ReadResponse, error) {
			return f(ContextWithURN(ctx, req.Urn), req)
		}
	}
	if f := prov.Update; f != nil {
		prov.Update = func(ctx context.Context, req p.UpdateRequest) (p.UpdateResponse, error) {
			return f(ContextWithURN(ctx, req.Urn), req)
		}
	}
	if f := prov.Delete; f != nil {
		prov.Delete = func(ctx context.Context, req p.DeleteRequest) error {
			return f(ContextWithURN(ctx, req.Urn), req)
		}
	}
	return prov
}

// ContextWithURN is ctx carrying urn, as WithURN hands it on.
func ContextWithURN(ctx context.Context, urn presource.URN) context.Context {
	return context.WithValue(ctx, urnKey{}, urn)
}

// URN is the URN of the resource the request running with ctx is about, ""
// when not known (a call outside the engine, a provider without WithURN).
func URN(ctx context.Context) presource.URN {
	urn, _ := ctx.Value(urnKey{}).(presource.URN)
	return urn
}
