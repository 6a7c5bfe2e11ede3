package pve

import (
	"context"
	"fmt"
)

type loggerKey struct{}

type warnerKey struct{}

// WithLogger returns a context whose long-running operations report progress
// through logf (for example to the Pulumi resource's log).
func WithLogger(ctx context.Context, logf func(msg string)) context.Context {
	return context.WithValue(ctx, loggerKey{}, logf)
}

// WithWarner returns a context whose operations report what the user must
// know about (a change left pending, a VM not restarted) through warnf.
func WithWarner(ctx context.Context, warnf func(msg string)) context.Context {
	return context.WithValue(ctx, warnerKey{}, warnf)
}

// Logf reports progress through the context's logger, if any.
func Logf(ctx context.Context, format string, args ...any) {
	if f, ok := ctx.Value(loggerKey{}).(func(string)); ok && f != nil {
		f(fmt.Sprintf(format, args...))
	}
}

// Warnf reports a warning through the context's warner, or through its
// logger as "warning: ..." when it has none.
func Warnf(ctx context.Context, format string, args ...any) {
	if f, ok := ctx.Value(warnerKey{}).(func(string)); ok && f != nil {
		f(fmt.Sprintf(format, args...))
		return
	}
	Logf(ctx, "warning: "+format, args...)
}
