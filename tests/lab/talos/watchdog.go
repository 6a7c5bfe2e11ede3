package talos

import (
	"runtime/debug"
	"time"
)

// closeWatchdog bounds Sim.Close: a simulator goroutine stuck with s.mu held
// (as the reconciler once was) made Close wait forever, and a test binary sat
// until go test's -timeout (60 min in make test) with nothing said. After
// closePatience Close panics with every goroutine's stack instead.
const closePatience = 10 * time.Minute

// watchdog runs fire after d unless the returned stop is called first.
func watchdog(d time.Duration, fire func()) (stop func()) {
	t := time.AfterFunc(d, fire)

	return func() { t.Stop() }
}

func panicStuckClose() {
	debug.SetTraceback("all")
	panic("talos lab: Close did not finish within " + closePatience.String() + ": a simulator goroutine is stuck (its stack is below, likely holding Sim.mu)")
}
