package pve

import (
	"context"
	"fmt"
)

type loggerKey struct{}

// WithLogger returns a context whose long-running operations report progress
// through logf (for example to the Pulumi resource's log).
func WithLogger(ctx context.Context, logf func(msg string)) context.Context {
	return context.WithValue(ctx, loggerKey{}, logf)
}

// Logf reports progress through the context's logger, if any.
func Logf(ctx context.Context, format string, args ...any) {
	if f, ok := ctx.Value(loggerKey{}).(func(string)); ok && f != nil {
		f(fmt.Sprintf(format, args...))
	}
}
