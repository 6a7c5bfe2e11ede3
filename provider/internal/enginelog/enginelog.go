// Package enginelog gives a handler the engine's logger of its request in
// a form that still reaches the engine once the request's context is done.
//
// pulumi-go-provider's logger sends each line to the engine with the
// context it was made from (pulumi-go-provider v1.5.0 logging.go, hostSink:
// host.Log(ctx, ...)). A logger made from a context whose deadline passed
// (an operation's timeout, Pulumi's customTimeouts, a read's own bound)
// sends nothing: gRPC refuses the call ("hostLogFailed: context deadline
// exceeded"), the line goes to the provider's stderr, and the user never
// sees the warning that says what was left undone.
package enginelog

import (
	"context"

	p "github.com/pulumi/pulumi-go-provider"
)

// Logger is the engine's logger of ctx's request: the request's values
// (the engine connection and the resource's URN) without its deadline or
// cancellation. Use it, not p.GetLogger, in every handler.
func Logger(ctx context.Context) p.Logger {
	return p.GetLogger(context.WithoutCancel(ctx))
}
