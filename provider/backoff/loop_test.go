package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

// fakeClock is a Loop's clock whose pauses only move it on, recorded.
type fakeClock struct {
	now    time.Time
	pauses []time.Duration
}

func (c *fakeClock) loop(l Loop) Loop {
	c.now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l.Now = func() time.Time { return c.now }
	l.Sleep = func(ctx context.Context, d time.Duration) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		c.pauses = append(c.pauses, d)
		c.now = c.now.Add(d)
		return nil
	}
	return l
}

var errPassing = errors.New("passing")

func TestRunPausesAsThePolicySaysUntilDone(t *testing.T) {
	var c fakeClock
	l := c.loop(Loop{Policy: Policy{Initial: time.Second, Max: 4 * time.Second}})
	err := l.Run(context.Background(), func(_ context.Context, n int) (bool, error) {
		return n == 5, errPassing
	})
	if !errors.Is(err, errPassing) {
		t.Fatalf("got %v, want the done attempt's error as it is", err)
	}
	if _, ok := AsExhausted(err); ok {
		t.Fatalf("a done attempt's error came back as *Exhausted: %v", err)
	}
	want := []time.Duration{1, 2, 4, 4}
	if len(c.pauses) != len(want) {
		t.Fatalf("pauses %v, want %v seconds", c.pauses, want)
	}
	for i, w := range want {
		if c.pauses[i] != w*time.Second {
			t.Fatalf("pauses %v, want %v seconds", c.pauses, want)
		}
	}
}

func TestRunStopsAfterItsAttempts(t *testing.T) {
	var c fakeClock
	calls := 0
	err := c.loop(Loop{Policy: Policy{Initial: time.Second}, Attempts: 3}).Run(context.Background(),
		func(_ context.Context, n int) (bool, error) {
			calls++
			return false, errPassing
		})
	ex, ok := AsExhausted(err)
	if !ok || !errors.Is(err, ErrAttempts) || !errors.Is(err, errPassing) || ex.Attempts != 3 {
		t.Fatalf("got %v (%+v)", err, ex)
	}
	if calls != 3 || len(c.pauses) != 2 || ex.Elapsed != 2*time.Second {
		t.Fatalf("%d calls, pauses %v, elapsed %s: want 3 calls, 2 pauses of 1s", calls, c.pauses, ex.Elapsed)
	}
}

// A pause that would end after the deadline is not taken, and OnPause sees
// only the pauses that are.
func TestRunStopsBeforeAPauseBeyondTheDeadline(t *testing.T) {
	var c fakeClock
	var seen []int
	l := c.loop(Loop{Policy: Policy{Initial: time.Second, Max: 8 * time.Second},
		OnPause: func(n int, _ time.Duration, last error) {
			if !errors.Is(last, errPassing) {
				t.Errorf("OnPause got %v", last)
			}
			seen = append(seen, n)
		}})
	l.Deadline = c.now.Add(5 * time.Second) // pauses 1s, 2s fit; 4s would end at 7s
	err := l.Run(context.Background(), func(context.Context, int) (bool, error) { return false, errPassing })
	ex, ok := AsExhausted(err)
	if !ok || !errors.Is(err, ErrDeadline) || ex.Attempts != 3 {
		t.Fatalf("got %v", err)
	}
	if len(c.pauses) != 2 || len(seen) != 2 || seen[1] != 2 {
		t.Fatalf("pauses %v, OnPause after attempts %v: want 2 of each", c.pauses, seen)
	}
}

func TestRunEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := Loop{Policy: Policy{Initial: time.Hour}} // the real Sleep: it must not wait the hour
	err := l.Run(ctx, func(_ context.Context, n int) (bool, error) {
		cancel()
		return false, errPassing
	})
	ex, ok := AsExhausted(err)
	if !ok || !errors.Is(err, context.Canceled) || !errors.Is(err, errPassing) || ex.Attempts != 1 {
		t.Fatalf("got %v", err)
	}
}

// An attempt's error that wraps an *Exhausted (another loop's) is the
// caller's own: AsExhausted does not mistake it for this loop's end.
func TestAsExhaustedOnlyMatchesRunsOwnResult(t *testing.T) {
	inner := &Exhausted{Attempts: 2, Cause: ErrAttempts}
	err := Loop{}.Run(context.Background(), func(context.Context, int) (bool, error) {
		return true, errors.Join(errPassing, inner)
	})
	if _, ok := AsExhausted(err); ok {
		t.Fatalf("AsExhausted matched a wrapped inner loop's end: %v", err)
	}
}
