package vmwatch

import (
	"testing"
	"time"
)

func TestJudge(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	up := time.Hour
	p := Policy{Grace: 30 * time.Second, HostBoot: 3 * time.Minute}.withDefaults()
	at := func(s int, state string, host time.Duration) Look {
		return Look{At: t0.Add(time.Duration(s) * time.Second), State: state, HostUptime: host}
	}

	for _, tc := range []struct {
		name  string
		looks []Look
		want  []bool
	}{
		{"running never", []Look{at(0, "running", up), at(60, "running", up)}, []bool{false, false}},
		{"stopped past the grace", []Look{at(0, "stopped", up), at(29, "stopped", up), at(30, "stopped", up)}, []bool{false, false, true}},
		{"a start in between restarts the streak",
			[]Look{at(0, "stopped", up), at(20, "running", up), at(40, "stopped", up), at(60, "stopped", up), at(70, "stopped", up)},
			[]bool{false, false, false, false, true}},
		{"unknown (host off) restarts the streak",
			[]Look{at(0, "stopped", up), at(20, "", 0), at(40, "stopped", up), at(69, "stopped", up)},
			[]bool{false, false, false, false}},
		{"a host that just booted may still start it",
			[]Look{at(0, "stopped", 10*time.Second), at(60, "stopped", 70*time.Second), at(180, "stopped", 3*time.Minute)},
			[]bool{false, false, true}},
		{"unknown uptime does not hold it back", []Look{at(0, "stopped", 0), at(30, "stopped", 0)}, []bool{false, true}},
		{"paused", []Look{at(0, "paused", up), at(30, "paused", up)}, []bool{false, true}},
		{"another state restarts the streak", []Look{at(0, "paused", up), at(20, "stopped", up), at(45, "stopped", up), at(50, "stopped", up)},
			[]bool{false, false, false, true}},
		{"gone, also on a host that just booted", []Look{at(0, "gone", time.Second), at(30, "gone", time.Second)}, []bool{false, true}},
		{"HA recovering it holds the judgement (review finding 6)",
			[]Look{{At: t0, State: "stopped", HAState: "recovery", HostUptime: up}, {At: t0.Add(time.Minute), State: "stopped", HAState: "started", HostUptime: up}},
			[]bool{false, false}},
		{"HA that gave up (error) or keeps it stopped does not",
			[]Look{{At: t0, State: "stopped", HAState: "error", HostUptime: up}, {At: t0.Add(30 * time.Second), State: "stopped", HAState: "error", HostUptime: up}},
			[]bool{false, true}},
		{"HA does not bring back a VM that is gone",
			[]Look{{At: t0, State: "gone", HAState: "started", HostUptime: up}, {At: t0.Add(30 * time.Second), State: "gone", HAState: "started", HostUptime: up}},
			[]bool{false, true}},
		{"a lock (stop-mode backup) holds the judgement",
			[]Look{{At: t0, State: "stopped", Lock: "backup", HostUptime: up}, {At: t0.Add(time.Minute), State: "stopped", Lock: "backup", HostUptime: up}},
			[]bool{false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var j judge
			for i, l := range tc.looks {
				if got, _ := j.observe(l, p); got != tc.want[i] {
					t.Errorf("look %d (%+v): down = %v, want %v", i, l, got, tc.want[i])
				}
			}
		})
	}
}
