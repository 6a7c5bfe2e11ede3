package talos

import (
	"slices"
	"testing"
)

// At the realistic time scale the members run Talos's etcd timing (etcd's
// defaults), so that the request timeout a joining member can wait out is
// a real member's 7 s, not the 15 s of the lab's slow flags; faster scales
// (tests on loaded cores) keep the slow ones.
func TestEtcdTimingFollowsTheTimeScale(t *testing.T) {
	for _, c := range []struct {
		scale float64
		want  []string
	}{
		{1, []string{"--heartbeat-interval=100", "--election-timeout=1000"}},
		{2, []string{"--heartbeat-interval=100", "--election-timeout=1000"}},
		{0.05, []string{"--heartbeat-interval=500", "--election-timeout=5000"}},
		{0, []string{"--heartbeat-interval=500", "--election-timeout=5000"}},
	} {
		s := &Sim{opts: Options{TimeScale: c.scale}}
		if got := s.etcdTimingFlags(); !slices.Equal(got, c.want) {
			t.Errorf("time scale %g: flags %v, want %v", c.scale, got, c.want)
		}
	}

	// The lab's bound on a call covers the slowest flags' request timeout.
	if etcdReqTimeout.Milliseconds() != 5000+2*etcdSlowElectionMillis {
		t.Errorf("etcdReqTimeout %v is not the slow flags' request timeout", etcdReqTimeout)
	}
}
