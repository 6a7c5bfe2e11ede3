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

// TestEtcdFirstJoinsAreSpread: control planes configured at the same moment
// do not make their first join attempt at the same moment (three in one
// reconcile pass had raft drop two member adds, a 30 s stall each): each
// node's start is its own share of etcdStartSpread, the same every boot,
// and the benchmark's critical path gets the bound.
func TestEtcdFirstJoinsAreSpread(t *testing.T) {
	t.Parallel()

	seen := map[time.Duration]string{}

	for _, name := range []string{"bench-cp-1", "bench-cp-2", "bench-cp-3", "bench-cp-4", "bench-cp-5", "cp-1", "cp-2", "cp-3"} {
		off := etcdStartOffset(name)
		if off < 0 || off >= etcdStartSpread || off != etcdStartOffset(name) {
			t.Fatalf("%s: start offset %s, want a fixed one in [0, %s)", name, off, etcdStartSpread)
		}

		if other, ok := seen[off]; ok {
			t.Fatalf("%s and %s start their etcd joins at the same moment (%s)", name, other, off)
		}

		seen[off] = name

		if got := etcdFirstJoin(name); got != criDuration+etcdJoinDuration+off {
			t.Fatalf("%s: first join %s after the configured boot, want %s", name, got, criDuration+etcdJoinDuration+off)
		}
	}

	if nd := RealisticNodeDurations("v1.14.1"); nd.EtcdStartSpread != etcdStartSpread || etcdStartSpread < time.Second {
		t.Fatalf("critical path's spread %s, the lab's %s", nd.EtcdStartSpread, etcdStartSpread)
	}
}

// TestPromotePaceFollowsTheVersion: a refused promotion is tried again at
// the node's Talos pace (1.12, 1.13, 1.14.0-rc.1's 15 s plus jitter; 1.14
// assumed to carry f80fd0985's 2 s), scaled, never under a second; the
// critical path's EtcdNextJoin comes from the same number.
func TestPromotePaceFollowsTheVersion(t *testing.T) {
	t.Parallel()

	for _, c := range []struct {
		version        string
		units, timeout time.Duration
		nextJoin       time.Duration
	}{
		{"v1.12.9", 15 * time.Second, 30 * time.Second, 16 * time.Second},
		{"v1.13.9", 15 * time.Second, 30 * time.Second, 16 * time.Second},
		{"v1.14.1", 2 * time.Second, time.Minute, 5 * time.Second},
	} {
		p := promotePaceOf(c.version)
		if p.units != c.units || p.jitter != time.Second || p.attemptTimeout != c.timeout {
			t.Errorf("%s: pace %+v, want units %s, jitter 1s, attempt %s", c.version, p, c.units, c.timeout)
		}

		if got := p.retryDelay(1, 500*time.Millisecond); got != c.units+500*time.Millisecond {
			t.Errorf("%s: next attempt after %s at time scale 1, want %s", c.version, got, c.units+500*time.Millisecond)
		}

		if got := p.retryDelay(0, 0); got != time.Second {
			t.Errorf("%s: next attempt after %s at time scale 0, want 1s", c.version, got)
		}

		if got := RealisticNodeDurations(c.version).EtcdNextJoin; got != c.nextJoin {
			t.Errorf("%s: critical path's joins %s apart, want %s", c.version, got, c.nextJoin)
		}
	}
}
