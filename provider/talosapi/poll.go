package talosapi

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/backoff"
)

// Options tune waiting and progress reporting. The zero value is usable.
type Options struct {
	// Progress receives one-line progress messages (never secrets). nil
	// discards them.
	Progress func(msg string)
	// PollMin and PollMax bound the pause between attempts; the pause grows
	// from PollMin to PollMax. Defaults 100ms and 1s: a node reaching a
	// state (configured, bootstrappable, healthy) is noticed within a
	// second, which a new cluster's chain of waits adds up over.
	PollMin, PollMax time.Duration
	// AttemptTimeout bounds one call to a node so that an address that drops
	// packets cannot stall a wait. Default 15s.
	AttemptTimeout time.Duration
	// ReportEvery is how often an unchanged state is reported again.
	// Default 10s.
	ReportEvery time.Duration
	// DefaultTimeout applies when the context has no deadline. Default 10m.
	DefaultTimeout time.Duration
	// Machines, when set, is asked about a node that does not answer: a
	// wait on a node whose machine it knows to be off ends at once with
	// its *MachineDownError. nil: nodes are waited for until the timeout.
	Machines MachineChecker
}

func (o Options) withDefaults() Options {
	if o.PollMin <= 0 {
		o.PollMin = 100 * time.Millisecond
	}

	if o.PollMax < o.PollMin {
		o.PollMax = time.Second
		if o.PollMax < o.PollMin {
			o.PollMax = o.PollMin
		}
	}

	if o.AttemptTimeout <= 0 {
		o.AttemptTimeout = 15 * time.Second
	}

	if o.ReportEvery <= 0 {
		o.ReportEvery = 10 * time.Second
	}

	if o.DefaultTimeout <= 0 {
		o.DefaultTimeout = 10 * time.Minute
	}

	return o
}

func (o Options) report(format string, args ...any) {
	if o.Progress != nil {
		o.Progress(fmt.Sprintf(format, args...))
	}
}

// boundedContext applies DefaultTimeout when ctx has no deadline.
func (o Options) boundedContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}

	return context.WithTimeout(ctx, o.DefaultTimeout)
}

// attemptContext bounds a single call (with the default when the options
// were not defaulted).
func (o Options) attemptContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, o.withDefaults().AttemptTimeout)
}

// stopError marks an error that ends a poll at once.
type stopError struct{ err error }

func (e stopError) Error() string { return e.err.Error() }
func (e stopError) Unwrap() error { return e.err }

// stop wraps err so that poll returns it without retrying.
func stop(err error) error {
	if err == nil {
		return nil
	}

	return stopError{err}
}

// WaitError is returned when a wait ends before its condition held: the
// deadline passed or the context was cancelled.
type WaitError struct {
	// What was awaited, e.g. "node 10.5.0.2 to run the applied configuration".
	What string
	// Elapsed is how long it waited.
	Elapsed time.Duration
	// LastState is the last thing observed, e.g. "Talos v1.12.4 running".
	LastState string
	// LastErr is the last error of an attempt, if any.
	LastErr error
	// Cause is the context's error.
	Cause error
}

func (e *WaitError) Error() string {
	verb := "timed out"
	if errors.Is(e.Cause, context.Canceled) {
		verb = "cancelled"
	}

	msg := fmt.Sprintf("%s after %s waiting for %s", verb, roundDuration(e.Elapsed), e.What)
	if e.LastState != "" {
		msg += "; last seen: " + e.LastState
	}

	if e.LastErr != nil {
		msg += "; last error: " + e.LastErr.Error()
	}

	return msg
}

func (e *WaitError) Unwrap() error { return e.Cause }

// step is one attempt of a wait. It returns whether the condition holds, a
// short description of what it saw, and an error: a stop() error ends the
// wait, any other error is remembered and the wait goes on.
type step func(ctx context.Context) (done bool, state string, err error)

// poll runs fn until it reports done, returns a stop() error, or ctx ends.
// It reports progress when the observed state changes and every
// ReportEvery while it stays the same.
func (o Options) poll(ctx context.Context, what string, fn step) error {
	o = o.withDefaults()

	ctx, cancel := o.boundedContext(ctx)
	defer cancel()

	start := time.Now()

	var (
		lastState, reported string
		lastErr             error
		lastReport          time.Time
	)

	loop := backoff.Loop{Policy: backoff.Policy{Initial: o.PollMin, Max: o.PollMax}}
	err := loop.Run(ctx, func(ctx context.Context, _ int) (bool, error) {
		done, state, err := fn(ctx)
		if done {
			if !lastReport.IsZero() {
				o.report("%s: done after %s", what, roundDuration(time.Since(start)))
			}

			return true, nil
		}

		var se stopError
		if errors.As(err, &se) {
			return true, se.err
		}

		// An attempt cut short by the deadline says only that time ran
		// out; keep what the attempts before it saw.
		cut := expired(ctx) && (lastErr != nil || lastState != "")

		if err != nil && !cut {
			lastErr = err
		}

		if state != "" && !cut {
			lastState = state
		}

		now := time.Now()

		line := lastState
		if line == "" && lastErr != nil {
			line = lastErr.Error()
		}

		if line != reported || now.Sub(lastReport) >= o.ReportEvery {
			o.report("waiting for %s (%s so far): %s", what, roundDuration(now.Sub(start)), line)
			reported, lastReport = line, now
		}

		return false, err
	})

	if _, ok := backoff.AsExhausted(err); ok {
		// only the context ends this loop
		return &WaitError{What: what, Elapsed: time.Since(start), LastState: lastState, LastErr: lastErr, Cause: ctx.Err()}
	}

	return err
}

// roundDuration keeps progress lines short: tenths of a second below ten
// seconds, whole seconds above.
func roundDuration(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond)
	}

	return d.Round(time.Second)
}

// expired reports whether ctx is done or its deadline has passed (a dial
// can fail with "i/o timeout" a moment before the context says so).
func expired(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}

	dl, ok := ctx.Deadline()

	return ok && !time.Now().Before(dl.Add(-5*time.Millisecond))
}
