package runtimetune

import (
	"os"
	"runtime"
	"testing"
)

func TestTuneProcsLeavesAGOMAXPROCSOfTheEnvironment(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	defer func() { procs.lowered = false }()

	t.Setenv("GOMAXPROCS", "3")
	runtime.GOMAXPROCS(3) // what the runtime read from it at start
	procs.lowered = false
	tuneProcs()
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Errorf("GOMAXPROCS set in the environment: %d after tuneProcs, want 3", got)
	}
	Deploying()
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Errorf("GOMAXPROCS set in the environment: %d after Deploying, want 3", got)
	}
}

func TestTuneProcsSetsOneUntilDeploying(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	defer func() { procs.lowered = false }()

	t.Setenv("GOMAXPROCS", "") // restored after the test
	if err := os.Unsetenv("GOMAXPROCS"); err != nil {
		t.Fatal(err)
	}
	runtime.GOMAXPROCS(4) // Go's default on a 4-core machine
	tuneProcs()
	if got := runtime.GOMAXPROCS(0); got != maxProcs {
		t.Errorf("GOMAXPROCS unset: %d after tuneProcs, want %d", got, maxProcs)
	}
	Deploying()
	if got := runtime.GOMAXPROCS(0); got != 4 {
		t.Errorf("after Deploying: %d, want Go's 4 back", got)
	}
	runtime.GOMAXPROCS(2)
	Deploying()
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Errorf("a second Deploying changed GOMAXPROCS to %d, want it left at 2", got)
	}
}
