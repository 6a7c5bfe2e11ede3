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

func TestPollWithoutDeadlineUsesDefaultTimeout(t *testing.T) {
	t.Parallel()

	o := fastOptions()
	o.DefaultTimeout = 100 * time.Millisecond

	start := time.Now()
	err := o.poll(context.Background(), "z", func(context.Context) (bool, string, error) { return false, "", nil })

	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Fatalf("err = %v after %s, want DeadlineExceeded after ~100ms", err, time.Since(start))
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
