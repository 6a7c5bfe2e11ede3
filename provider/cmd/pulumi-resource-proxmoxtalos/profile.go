package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"syscall"
)

// envCPUProfile names a folder: when set, the provider writes a CPU profile of its whole
// life to cpu-<pid>.pprof there (go tool pprof reads it). It is how a preview's CPU is
// taken apart (issue 14, docs/benchmarks.md); unset, nothing changes.
const envCPUProfile = "PROXMOXTALOS_CPU_PROFILE"

// envCPUProfileHz sets the CPU profile's sampling rate (Go's default is 100 Hz): a no-op
// preview spends a few hundred milliseconds, tens of samples at the default, too few to
// compare handlers. The kernel's tick caps the rate actually taken (about 250 Hz on these
// machines at 1000) while pprof counts each sample as 1/rate: read the figures as shares.
const envCPUProfileHz = "PROXMOXTALOS_CPU_PROFILE_HZ"

// envHeapProfile names a folder: when set, the provider writes a heap profile to
// heap-<pid>.pprof there when it ends, whose alloc_space/alloc_objects samples say what
// allocated over its whole life (go tool pprof -sample_index=alloc_space): where the
// garbage collector's work comes from. Unset, nothing changes.
const envHeapProfile = "PROXMOXTALOS_HEAP_PROFILE"

// startProfile starts the profile when asked and returns what ends it. The engine ends its
// plugins with an interrupt to the process group (pulumi sdk resource/plugin:
// InterruptChildren), which would end the process before the profile is written: while
// profiling, an interrupt writes the profile and then exits as the interrupt would have.
func startProfile() (stop func()) {
	stopCPU, cpu := startCPUProfile()
	heapDir := os.Getenv(envHeapProfile)
	if !cpu && heapDir == "" {
		return func() {}
	}
	// once: an interrupt can arrive while main is already ending the profiles
	var once sync.Once
	stop = func() {
		once.Do(func() {
			stopCPU()
			if heapDir != "" {
				writeHeapProfile(heapDir)
			}
		})
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		stop()
		os.Exit(130)
	}()
	return stop
}

// writeHeapProfile writes the heap profile (allocations since the start included) to dir.
func writeHeapProfile(dir string) {
	path := filepath.Join(dir, fmt.Sprintf("heap-%d.pprof", os.Getpid()))
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v (no profile taken)\n", envHeapProfile, err)
		return
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v (the profile may be incomplete)\n", envHeapProfile, err)
	}
	if err := f.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v (the profile may be incomplete)\n", envHeapProfile, err)
	}
}

// startCPUProfile starts the CPU profile when asked and returns what ends it and whether
// it runs.
func startCPUProfile() (stop func(), started bool) {
	dir := os.Getenv(envCPUProfile)
	if dir == "" {
		return func() {}, false
	}
	path := filepath.Join(dir, fmt.Sprintf("cpu-%d.pprof", os.Getpid()))
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v (no profile taken)\n", envCPUProfile, err)
		return func() {}, false
	}
	if hz, err := strconv.Atoi(os.Getenv(envCPUProfileHz)); err == nil && hz > 0 {
		// before StartCPUProfile, which then keeps this rate (and prints that it
		// cannot set its own: runtime/pprof)
		runtime.SetCPUProfileRate(hz)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v (no profile taken)\n", envCPUProfile, err)
		_ = f.Close() // nothing was written to it
		return func() {}, false
	}
	stop = func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v (the profile may be incomplete)\n", envCPUProfile, err)
		}
	}
	return stop, true
}
