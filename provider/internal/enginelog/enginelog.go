// Package enginelog gives a handler the engine's logger of its request in
// a form that still reaches the engine once the request's context is done,
// and that cannot block the handler when the engine stops answering.
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
	"fmt"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
)

// lineBound is how long one line may wait for the engine. host.Log is a
// synchronous gRPC call: without a deadline, an engine that hung or is
// shutting down after a Cancel would hold the handler forever. A line that
// runs out of it goes to the provider's stderr (hostSink's fallback).
const lineBound = 10 * time.Second

// Log is the engine's logger of a request: the request's values (the
// engine connection and the resource's URN) without its deadline or
// cancellation, each line with a deadline of its own. It has p.Logger's
// methods that handlers use.
type Log struct {
	ctx   context.Context
	bound time.Duration
}

// Logger is the engine's logger of ctx's request. Use it, not p.GetLogger,
// in every handler.
func Logger(ctx context.Context) Log {
	return Log{ctx: context.WithoutCancel(ctx), bound: lineBound}
}

// send gives one line its own deadline.
func (l Log) send(line func(p.Logger)) {
	ctx, cancel := context.WithTimeout(l.ctx, l.bound)
	defer cancel()

	line(p.GetLogger(ctx))
}

func (l Log) Debug(msg string)              { l.send(func(g p.Logger) { g.Debug(msg) }) }
func (l Log) Debugf(msg string, a ...any)   { l.Debug(fmt.Sprintf(msg, a...)) }
func (l Log) Info(msg string)               { l.send(func(g p.Logger) { g.Info(msg) }) }
func (l Log) Infof(msg string, a ...any)    { l.Info(fmt.Sprintf(msg, a...)) }
func (l Log) Warning(msg string)            { l.send(func(g p.Logger) { g.Warning(msg) }) }
func (l Log) Warningf(msg string, a ...any) { l.Warning(fmt.Sprintf(msg, a...)) }
func (l Log) Error(msg string)              { l.send(func(g p.Logger) { g.Error(msg) }) }
func (l Log) Errorf(msg string, a ...any)   { l.Error(fmt.Sprintf(msg, a...)) }

// InfoStatus is shown while it is the resource's latest line.
func (l Log) InfoStatus(msg string)            { l.send(func(g p.Logger) { g.InfoStatus(msg) }) }
func (l Log) InfoStatusf(msg string, a ...any) { l.InfoStatus(fmt.Sprintf(msg, a...)) }
