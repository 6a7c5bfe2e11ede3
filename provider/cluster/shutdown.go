package cluster

import (
	"context"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
)

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
