package runtimetune

import (
	"os"
	"runtime/debug"
)

// gcPercent is the provider's GOGC unless the environment sets one. The
// provider lives for one command, and most of what it allocates is garbage
// of a single engine call (the decoding of one resource's inputs, one
// gRPC message): with Go's default of 100 it collected about every 2× its
// small live heap, a fifth of a 60-node no-op preview's CPU (issue 14). A
// higher target trades memory for that: figures in docs/benchmarks.md.
const gcPercent = 400

// tuneGC sets the garbage collector's target unless GOGC or GOMEMLIMIT is set
// in the environment, which then decide as usual (GOGC=100 restores Go's default).
func tuneGC() {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return
	}
	debug.SetGCPercent(gcPercent)
}
