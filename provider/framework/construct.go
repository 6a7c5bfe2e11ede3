package framework

import (
	"context"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
)

// A ConstructGuard prepares one component's inputs before infer fills the
// component's Go arguments from them. infer v1.5.0 hands a component the
// zero value of an input that is not known yet (a preview, with the value
// an output of a resource not created yet), which would plan silently
// without it, and its SDK refuses a secret in a plain field ("expected
// destination type to implement pulumi.Input or pulumi.Output, got
// string"). The component's package says which inputs may be unknown or
// secret, and what stands in for them.
type ConstructGuard struct {
	// Token is the component's type token.
	Token string
	// Prepare returns the inputs the construct gets and the context it
	// runs with, or an error that refuses the construct (naming the inputs).
	Prepare func(ctx context.Context, req p.ConstructRequest) (context.Context, p.ConstructRequest, error)
	// Scrub, when set, rewrites an error of the construct (the secret
	// texts of its inputs out of it); ctx is the one Prepare returned.
	Scrub func(ctx context.Context, err error) error
}

// WithConstructGuards applies each guard to the constructs of its
// component, and ends every construct the engine stopped quietly (see
// quietShutdown).
func WithConstructGuards(prov p.Provider, guards ...ConstructGuard) p.Provider {
	inner := prov.Construct
	if inner == nil {
		return prov
	}
	prov.Construct = quietShutdown(func(ctx context.Context, req p.ConstructRequest) (p.ConstructResponse, error) {
		for _, g := range guards {
			if req.Urn.Type().String() != g.Token {
				continue
			}
			ctx, req, err := g.Prepare(ctx, req)
			if err != nil {
				return p.ConstructResponse{}, err
			}
			resp, err := inner(ctx, req)
			if err != nil && g.Scrub != nil {
				err = g.Scrub(ctx, err)
			}
			return resp, err
		}
		return inner(ctx, req)
	})
	return prov
}

// shutdownMarks are what the SDK's construct returns when the component's
// outputs can no longer resolve because the engine is stopping the update:
// a child resource failed (the engine reported that error already) or the
// update was cancelled. The engine cancels the construct and closes the
// connection its children registered through (pulumi/pulumi#19976), so
// awaiting the outputs ends with one of these.
var shutdownMarks = []string{
	"context canceled",
	"grpc: the client connection is closing",
	"resource monitor shut down",
}

// quietShutdown keeps a construct that ends only because the engine is
// stopping from reporting an error of its own ("TalosCluster ... has a
// problem: marshaling properties: awaiting input property ...: context
// canceled"), which the engine prints first and which buries the failure
// that stopped the update. The construct ends quietly instead: the engine
// no longer uses its result, and the component keeps its last outputs.
func quietShutdown(construct func(context.Context, p.ConstructRequest) (p.ConstructResponse, error)) func(context.Context, p.ConstructRequest) (p.ConstructResponse, error) {
	return func(ctx context.Context, req p.ConstructRequest) (p.ConstructResponse, error) {
		resp, err := construct(ctx, req)
		if err != nil && isShutdown(err) {
			return p.ConstructResponse{Urn: req.Urn}, nil
		}
		return resp, err
	}
}

// isShutdown: the error only says the engine stopped the construct (only
// the engine cancels a construct or closes the connection its children
// register through).
func isShutdown(err error) bool {
	msg := err.Error()
	for _, m := range shutdownMarks {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}
