package talos

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestWatchdogFiresOnlyWhenNotStopped(t *testing.T) {
	var fired atomic.Int32

	stop := watchdog(time.Millisecond, func() { fired.Add(1) })
	for range 1000 {
		if fired.Load() == 1 {
			break
		}

		time.Sleep(5 * time.Millisecond)
	}

	stop()

	if fired.Load() != 1 {
		t.Fatalf("a watchdog that was not stopped fired %d times", fired.Load())
	}

	var late atomic.Int32

	stop = watchdog(time.Hour, func() { late.Add(1) })
	stop()

	if late.Load() != 0 {
		t.Fatal("a stopped watchdog fired")
	}
}
