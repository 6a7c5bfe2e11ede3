package pve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/backoff"
)

// RetryPolicy says how long to keep retrying transient answers.
type RetryPolicy struct {
	Initial time.Duration
	Max     time.Duration
	// MaxElapsed bounds the retries when ctx has no deadline.
	MaxElapsed time.Duration
}

// DefaultRetry suits Proxmox locks, which are held for seconds to minutes.
var DefaultRetry = RetryPolicy{Initial: 250 * time.Millisecond, Max: 5 * time.Second, MaxElapsed: 10 * time.Minute}

// Retryable reports whether an operation that failed with err may be run
// again. A lock timeout or "VM is locked" means Proxmox refused before doing
// anything, so it is always safe, and so is a task that failed for a cause
// that passes (its worker ran its cleanup: a failed create or clone removes
// what it made). Proxy errors and lost connections are ambiguous for calls
// that change state: the request may have run. Those are retried only when
// the operation is idempotent.
func Retryable(err error, idempotent bool) bool {
	switch Classify(err) {
	case KindLocked:
		return true
	case KindTransient, KindUnreachable:
		return idempotent || notSent(err) || isTaskFailure(err)
	}
	return false
}

func isTaskFailure(err error) bool {
	var te *TaskError
	return errors.As(err, &te)
}

// maxServerErrorRetries bounds the retries of an idempotent call that
// failed with a plain server error (see IsServerError). Four retries (about
// 4 s of pauses) make a run of passing 500s that outlasts them rare even
// where one in seven calls fails (at 15 %: 0.008 % per call, where two
// retries left 0.3 %, which the fault campaign hit in some GET of most
// failed ups), yet report a 500 that stays within seconds.
const maxServerErrorRetries = 4

// maxTaskRetries bounds the retries of a task that failed for a cause that
// passes: a second or third run normally gets through, and a cause that
// keeps coming back is worth reporting.
const maxTaskRetries = 3

// IsServerError reports an HTTP 5xx answer that is nothing more specific
// (not a lock, a missing object or a proxy failure): Proxmox says the call
// failed without saying why it might pass later.
func IsServerError(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status >= 500 && Classify(err) == KindOther
}

// notSent reports failures that prove the request never reached the node
// that would run it, so that even a create can be sent again: a refused or
// timed-out connection to the API, and pveproxy's 595, which it answers
// when it cannot connect to the node that owns the resource (AnyEvent::HTTP
// status 595: "errors during connection establishment, proxy handshake";
// 596 and 597 come after the request was sent and stay ambiguous).
func notSent(err error) bool {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status == 595
	}
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}

// Retry runs op until it succeeds, fails with an error that is not
// retryable, or the time is up (ctx's deadline, else p.MaxElapsed). A
// plain server error (idempotent calls only) and a failed task get a few
// more tries, not the whole budget a lock gets. Each reason for retrying is
// logged once through the context's logger, with what is being retried.
func (p RetryPolicy) Retry(ctx context.Context, what string, idempotent bool, op func(ctx context.Context) error) error {
	start := time.Now()
	deadline, hasDeadline := ctx.Deadline()
	if !hasDeadline && p.MaxElapsed > 0 {
		deadline = start.Add(p.MaxElapsed)
	}
	var last error // the last answer worth reporting
	serverErrors, taskFailures := 0, 0
	logged := map[string]bool{}
	loop := backoff.Loop{
		// jittered, so that parallel creates do not retry in lock step
		Policy:   backoff.Policy{Initial: p.Initial, Max: p.Max, Jitter: true},
		Deadline: deadline,
		OnPause: func(_ int, _ time.Duration, err error) {
			if reason := retryReason(err); !logged[reason] {
				logged[reason] = true
				Logf(ctx, "%s: %s; retrying (with backoff up to %s)", what, reason, p.Max)
			}
		},
	}
	if deadline.IsZero() {
		loop.Attempts = 1 // neither ctx nor p bounds the time: no retries
	}
	err := loop.Run(ctx, func(ctx context.Context, attempt int) (bool, error) {
		err := op(ctx)
		if err == nil {
			if attempt > 1 {
				Logf(ctx, "%s: succeeded after %d attempts", what, attempt)
			}
			return true, nil
		}
		if ctx.Err() != nil && last != nil {
			// the time ran out during a retry: say what kept failing
			return true, fmt.Errorf("%s: gave up after %d attempts over %s (%v): %w",
				what, attempt, time.Since(start).Round(time.Second), ctx.Err(), last)
		}
		switch {
		case Retryable(err, idempotent) && isTaskFailure(err) && Classify(err) != KindLocked:
			if taskFailures++; taskFailures > maxTaskRetries {
				return true, fmt.Errorf("%s: failed %d times: %w", what, taskFailures, err)
			}
		case Retryable(err, idempotent):
		case idempotent && IsServerError(err) && serverErrors < maxServerErrorRetries:
			// a plain server error on a call that is safe to repeat may be
			// a passing hiccup (pmxcfs, a restarting pvedaemon)
			serverErrors++
		case serverErrors > 0 && IsServerError(err):
			return true, fmt.Errorf("%s: failed %d times in a row: %w", what, attempt, err)
		default:
			return true, err
		}
		last = err
		return ctx.Err() != nil, err
	})
	ex, ok := backoff.AsExhausted(err)
	switch {
	case !ok:
		return err
	case errors.Is(ex.Cause, backoff.ErrDeadline) || errors.Is(ex.Cause, backoff.ErrAttempts):
		return fmt.Errorf("%s: still failing after %d attempts over %s: %w",
			what, ex.Attempts, time.Since(start).Round(time.Second), ex.Last)
	default:
		return fmt.Errorf("%s: gave up after %d attempts (%v): %w", what, ex.Attempts, ctx.Err(), ex.Last)
	}
}

// retryReason names why an attempt failed, the same for the same cause:
// its kind and the first line of the error (for a failed task, without
// the announcement of its log, which follows on the next lines).
func retryReason(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	msg = strings.TrimSuffix(msg, "; task log ends with:")
	return fmt.Sprintf("%s (%s)", Classify(err), msg)
}
