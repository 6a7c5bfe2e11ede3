// Package runtimetune sets the provider process's garbage collector target and GOMAXPROCS
// (unless the environment sets them): Tune, which the provider's command calls from the
// initializer of a package of its own that runs before most of the program's (see
// provider/cmd/pulumi-resource-proxmoxtalos/internal/early), and Deploying, which gives a
// process that is asked to change something Go's GOMAXPROCS back. It imports only the
// standard library, and does nothing by being imported: tests and other programs that link
// it keep Go's defaults.
package runtimetune

// Tune sets the GC target (gcPercent) and GOMAXPROCS (maxProcs) unless the environment
// sets them.
func Tune() {
	tuneGC()
	tuneProcs()
}
