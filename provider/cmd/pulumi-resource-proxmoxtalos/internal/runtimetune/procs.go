package runtimetune

import (
	"os"
	"runtime"
)

// maxProcs is the provider's GOMAXPROCS unless the environment sets one. The provider's
// work is serving the engine's calls, one small request after another (in a no-op
// preview: a Check, a Diff and a registration per child resource), and waiting on the
// network: with a P per core, the scheduler wakes idle threads and lets them spin looking
// for work at nearly every request, CPU that does no work (about 5 % of a 60-node no-op
// preview on 2 cores, issue 14; figures in docs/benchmarks.md). One P runs the same
// goroutines, preempted as usual; what runs in parallel is the waiting, which needs no P.
const maxProcs = 1

// tuneProcs sets GOMAXPROCS unless it is set in the environment, which then decides as
// usual (GOMAXPROCS=0 or the number of cores restores Go's default).
func tuneProcs() {
	if _, set := os.LookupEnv("GOMAXPROCS"); set {
		return
	}
	runtime.GOMAXPROCS(maxProcs)
}
