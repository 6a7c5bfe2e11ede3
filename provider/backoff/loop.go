package backoff

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrAttempts and ErrDeadline are the causes of an Exhausted loop that
// reached its own bound rather than the end of its context.
var (
	ErrAttempts = errors.New("no attempts left")
	ErrDeadline = errors.New("the next pause would end after the deadline")
)

// Loop is one retry or poll loop: attempts with a Policy's pauses between
// them, within optional bounds. The decisions stay with the caller, next to
// its error classification: each attempt says whether the loop is done
// (success, or an error to return as it is) or worth another attempt.
type Loop struct {
	Policy Policy
	// Attempts bounds the number of attempts; 0: no bound.
	Attempts int
	// Deadline: a pause that would end after it is not taken; zero: no
	// bound of its own (the context's deadline still ends a pause).
	Deadline time.Time
	// OnPause, when set, is called before each pause (n attempts made so
	// far, the attempt's error): where a loop logs that it retries.
	OnPause func(n int, pause time.Duration, last error)
	// Sleep and Now default to package Sleep and time.Now; tests replace
	// them with a fake clock.
	Sleep func(ctx context.Context, d time.Duration) error
	Now   func() time.Time
}

// Exhausted is what Run returns when no attempt was done: the context ended
// during a pause, or the loop reached its Attempts or Deadline.
type Exhausted struct {
	Attempts int
	Elapsed  time.Duration
	// Last is the error of the last attempt (nil if it had none).
	Last error
	// Cause is the context's error, ErrAttempts or ErrDeadline.
	Cause error
}

func (e *Exhausted) Error() string {
	msg := fmt.Sprintf("gave up after %d attempts over %s (%v)", e.Attempts, e.Elapsed.Round(time.Millisecond), e.Cause)
	if e.Last != nil {
		msg += ": " + e.Last.Error()
	}
	return msg
}

// Unwrap lets errors.Is find both the cause (context.Canceled, ErrAttempts
// ...) and the last attempt's error.
func (e *Exhausted) Unwrap() []error { return []error{e.Cause, e.Last} }

// Run calls attempt (n counts from 1) until it reports done, and returns
// its error then (nil: success). Between attempts it pauses as l.Policy
// says; it returns an *Exhausted when the context ends during a pause, after
// l.Attempts attempts, or when the next pause would end after l.Deadline.
func (l Loop) Run(ctx context.Context, attempt func(ctx context.Context, n int) (done bool, err error)) error {
	sleep, now := l.Sleep, l.Now
	if sleep == nil {
		sleep = Sleep
	}
	if now == nil {
		now = time.Now
	}
	start := now()
	pauses := l.Policy.Start()
	for n := 1; ; n++ {
		done, err := attempt(ctx, n)
		if done {
			return err
		}
		exhausted := func(cause error) error {
			return &Exhausted{Attempts: n, Elapsed: now().Sub(start), Last: err, Cause: cause}
		}
		if l.Attempts > 0 && n >= l.Attempts {
			return exhausted(ErrAttempts)
		}
		pause := pauses.Next()
		if !l.Deadline.IsZero() && now().Add(pause).After(l.Deadline) {
			return exhausted(ErrDeadline)
		}
		if l.OnPause != nil {
			l.OnPause(n, pause, err)
		}
		if serr := sleep(ctx, pause); serr != nil {
			return exhausted(serr)
		}
	}
}

// AsExhausted returns the *Exhausted that Run itself returned; not one that
// an attempt's error wraps (a done attempt's error is the caller's own).
func AsExhausted(err error) (*Exhausted, bool) {
	ex, ok := err.(*Exhausted) // Run's own result only, see above
	return ex, ok
}
