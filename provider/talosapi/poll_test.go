package talosapi

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestPollReportsChangesAndStops(t *testing.T) {
	t.Parallel()

	var (
		mu    sync.Mutex
		lines []string
	)

	o := fastOptions()
	o.Progress = func(s string) { mu.Lock(); lines = append(lines, s); mu.Unlock() }

	n := 0
	err := o.poll(context.Background(), "node x", func(context.Context) (bool, string, error) {
		n++
		switch {
		case n < 3:
			return false, "booting", nil
		case n < 5:
			return false, "installing", nil
		default:
			return true, "running", nil
		}
	})
	if err != nil {
		t.Fatal(err)
	}

	joined := strings.Join(lines, "\n")
	if strings.Count(joined, "booting") != 1 || strings.Count(joined, "installing") != 1 {
		t.Fatalf("each state should be reported once when it changes, got:\n%s", joined)
	}

	if !strings.Contains(lines[len(lines)-1], "node x: done after") {
		t.Fatalf("last line %q should say done", lines[len(lines)-1])
	}
}

func TestPollStopErrorEndsAtOnce(t *testing.T) {
	t.Parallel()

	boom := errors.New("invalid config")
	n := 0

	err := fastOptions().poll(context.Background(), "x", func(context.Context) (bool, string, error) {
		n++

		return false, "", stop(boom)
	})
	if !errors.Is(err, boom) || n != 1 {
		t.Fatalf("err = %v after %d attempts, want boom after 1", err, n)
	}
}

func TestPollTimeoutCarriesLastStateAndError(t *testing.T) {
	t.Parallel()

	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()

	err := fastOptions().poll(ctx, "node y to come back", func(context.Context) (bool, string, error) {
		return false, "rebooting", errors.New("connection refused")
	})

	var we *WaitError
	if !errors.As(err, &we) {
		t.Fatalf("err = %v, want *WaitError", err)
	}

	for _, want := range []string{"timed out after", "node y to come back", "last seen: rebooting", "last error: connection refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

// A poll given no deadline runs under the options' DefaultTimeout: every
// attempt sees a deadline no further ahead than it, and the poll ends with
// DeadlineExceeded. An attempt that sees no deadline ends the poll as done,
// so that a poll left unbounded fails the test instead of hanging it.
func TestPollWithoutDeadlineUsesDefaultTimeout(t *testing.T) {
	t.Parallel()

	o := fastOptions()
	o.DefaultTimeout = 100 * time.Millisecond

	var unbounded, tooFar bool
	err := o.poll(context.Background(), "z", func(ctx context.Context) (bool, string, error) {
		deadline, ok := ctx.Deadline()
		switch {
		case !ok:
			unbounded = true
			return true, "", nil
		case time.Until(deadline) > o.DefaultTimeout:
			tooFar = true
		}
		return false, "", nil
	})

	if unbounded || tooFar || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v (an attempt without a deadline: %v, with one beyond %s: %v), want DeadlineExceeded",
			err, unbounded, o.DefaultTimeout, tooFar)
	}
}

func TestPollCancelledSaysCancelled(t *testing.T) {
	t.Parallel()

	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	err := fastOptions().poll(ctx, "w", func(context.Context) (bool, string, error) { return false, "", nil })
	if err == nil || !strings.HasPrefix(err.Error(), "cancelled after") {
		t.Fatalf("err = %v", err)
	}
}
