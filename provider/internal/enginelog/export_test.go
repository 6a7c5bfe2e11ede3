package enginelog

import (
	"context"
	"time"
)

// LoggerWithin is Logger with another bound per line.
func LoggerWithin(ctx context.Context, bound time.Duration) Log {
	l := Logger(ctx)
	l.bound = bound

	return l
}
