package talos

import (
	"testing"
	"time"
)

// TestJoinRetryDelayIsTalosPacing: at time scale 1 a failed join is tried
// again after Talos's 3 s plus its jitter, not after a second (three
// waiting control planes then proposed member adds three times as often as
// Talos, and met a promotion in raft); below, never sooner than a second.
func TestJoinRetryDelayIsTalosPacing(t *testing.T) {
	t.Parallel()

	for _, c := range []struct {
		scale  float64
		jitter time.Duration
		want   time.Duration
	}{
		{1, 0, 3 * time.Second},
		{1, 999 * time.Millisecond, 3999 * time.Millisecond},
		{2, 500 * time.Millisecond, 7 * time.Second},
		{0.1, 500 * time.Millisecond, time.Second},
		{0, 0, time.Second},
	} {
		if got := joinRetryDelay(c.scale, c.jitter); got != c.want {
			t.Errorf("time scale %g, jitter %s: retry after %s, want %s", c.scale, c.jitter, got, c.want)
		}
	}

	s := &Sim{opts: Options{TimeScale: 1}}
	for range 20 {
		if d := time.Until(s.nextJoinRetry()); d < 2900*time.Millisecond || d > 4*time.Second {
			t.Fatalf("next join attempt in %s at time scale 1, want within [3 s, 4 s)", d)
		}
	}
}
