package talos

import (
	"os"
	"path/filepath"
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

// PROXMOXTALOS_LAB_PROC_LOGS names a directory that need not exist yet: a
// process started with it set writes its output there.
func TestProcLogsGoToANewDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "logs")
	t.Setenv(ProcLogsEnv, dir)

	p, err := startProc("echo test", "/bin/sh", "-c", "echo kept")
	if err != nil {
		t.Fatal(err)
	}
	<-p.done

	files, err := filepath.Glob(filepath.Join(dir, "echo-test-*.log"))
	if err != nil || len(files) != 1 {
		t.Fatalf("files %v (%v), want one", files, err)
	}
	if b, err := os.ReadFile(files[0]); err != nil || string(b) != "kept\n" {
		t.Errorf("kept %q (%v), want the process's output", b, err)
	}
}
