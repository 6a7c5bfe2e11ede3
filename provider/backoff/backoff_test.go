package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestPausesDoubleUpToMax(t *testing.T) {
	s := Policy{Initial: 100 * time.Millisecond, Max: time.Second}.Start()
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i, w := range want {
		if got := s.Next(); got != w*time.Millisecond {
			t.Fatalf("pause %d: got %s, want %s", i+1, got, w*time.Millisecond)
		}
	}
}

func TestMaxBelowInitialKeepsInitial(t *testing.T) {
	s := Policy{Initial: time.Second}.Start()
	for i := range 3 {
		if got := s.Next(); got != time.Second {
			t.Fatalf("pause %d: got %s, want 1s", i+1, got)
		}
	}
}

func TestJitterStaysWithinHalfToFull(t *testing.T) {
	s := Policy{Initial: 400 * time.Millisecond, Max: 400 * time.Millisecond, Jitter: true}.Start()
	seen := map[time.Duration]bool{}
	for range 200 {
		p := s.Next()
		if p < 200*time.Millisecond || p > 400*time.Millisecond {
			t.Fatalf("pause %s outside [200ms, 400ms]", p)
		}
		seen[p] = true
	}
	if len(seen) < 2 {
		t.Fatal("200 jittered pauses were all the same")
	}
}

func TestSleepEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("got %v after a short sleep", err)
	}
}
