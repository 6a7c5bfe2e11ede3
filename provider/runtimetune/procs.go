package runtimetune

import (
	"os"
	"runtime"
	"sync"
)

// maxProcs is the provider's GOMAXPROCS until it changes something (Deploying), unless the
// environment sets one. A preview's work is serving the engine's calls, one small request
// after another (a Check, a Diff and a registration per child resource), and waiting on the
// network: with a P per core, the scheduler wakes idle threads and lets them spin looking
// for work at nearly every request, CPU that does no work (about 5 % of a 60-node no-op
// preview on 2 cores, issue 14; figures in docs/benchmarks.md). One P runs the same
// goroutines, preempted as usual; what runs in parallel is the waiting, which needs no P.
// A deployment gets the machine's Ps back: a create at the lab's time scale 0 (CPU-bound,
// the lab on the same cores) took 1-2 s longer on one P.
const maxProcs = 1

var procs struct {
	sync.Mutex
	lowered bool // tuneProcs set maxProcs
	def     int  // Go's GOMAXPROCS before that
}

// tuneProcs sets GOMAXPROCS unless it is set in the environment, which then decides as
// usual (GOMAXPROCS=0 or the number of cores restores Go's default).
func tuneProcs() {
	if _, set := os.LookupEnv("GOMAXPROCS"); set {
		return
	}
	procs.Lock()
	defer procs.Unlock()
	procs.def = runtime.GOMAXPROCS(maxProcs)
	procs.lowered = true
}

// Deploying restores Go's GOMAXPROCS when tuneProcs lowered it: the provider is asked to
// change something (a create, update or delete, or a component's Construct outside a
// preview), work with parallel parts of its own. Later calls do nothing.
func Deploying() {
	procs.Lock()
	defer procs.Unlock()
	if !procs.lowered {
		return
	}
	procs.lowered = false
	runtime.GOMAXPROCS(procs.def)
}
