package runtimetune

import (
	"os"
	"runtime"
	"testing"
)

func TestTuneProcsLeavesAGOMAXPROCSOfTheEnvironment(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))

	t.Setenv("GOMAXPROCS", "3")
	runtime.GOMAXPROCS(3) // what the runtime read from it at start
	tuneProcs()
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Errorf("GOMAXPROCS set in the environment: %d after tuneProcs, want 3", got)
	}
}

func TestTuneProcsSetsOneByDefault(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))

	t.Setenv("GOMAXPROCS", "")
	if err := unsetenv("GOMAXPROCS"); err != nil {
		t.Fatal(err)
	}
	runtime.GOMAXPROCS(4)
	tuneProcs()
	if got := runtime.GOMAXPROCS(0); got != maxProcs {
		t.Errorf("GOMAXPROCS unset: %d after tuneProcs, want %d", got, maxProcs)
	}
}

// unsetenv removes key for the rest of the test (t.Setenv first, so that it is restored).
func unsetenv(key string) error { return os.Unsetenv(key) }
