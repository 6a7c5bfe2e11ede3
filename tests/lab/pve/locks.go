package pve

import (
	"fmt"
	"sync"
	"time"
)

// flock is one /var/lock/qemu-server/lock-<vmid>.conf: any number of
// shared holders or one exclusive holder, like flock(2).
type flock struct {
	mu      sync.Mutex
	readers int
	writer  bool
	changed chan struct{} // closed and replaced on every release
}

func newFlock() *flock { return &flock{changed: make(chan struct{})} }

func (f *flock) tryLock(shared bool) (bool, chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.writer || (!shared && f.readers > 0) {
		return false, f.changed
	}
	if shared {
		f.readers++
	} else {
		f.writer = true
	}
	return true, nil
}

func (f *flock) unlock(shared bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if shared {
		f.readers--
	} else {
		f.writer = false
	}
	close(f.changed)
	f.changed = make(chan struct{})
}

// lockVM takes the config lock exclusively (PVE::AbstractConfig::lock_config_full).
// Must be called without s.mu held.
func (s *Server) lockVM(vmid int, timeout time.Duration) (func(), error) {
	return s.lockVMMode(vmid, timeout, false)
}

// lockVMShared takes it shared (lock_config_shared): clones of a stopped
// VM or template share the source's lock and run in parallel.
func (s *Server) lockVMShared(vmid int, timeout time.Duration) (func(), error) {
	return s.lockVMMode(vmid, timeout, true)
}

// lockVMMode waits for the flock like PVE::Tools::lock_file_full; waiting
// longer than timeout fails with "can't lock file '...' - got timeout". The
// wait is scaled by the time scale but lasts at least a second, so
// concurrent fast tasks still serialise instead of failing.
func (s *Server) lockVMMode(vmid int, timeout time.Duration, shared bool) (func(), error) {
	s.mu.Lock()
	f, ok := s.flocks[vmid]
	if !ok {
		f = newFlock()
		s.flocks[vmid] = f
	}
	inject := s.rollLocked(s.faults.LockTimeoutRate)
	s.mu.Unlock()
	if inject {
		return nil, lockTimeout(vmid)
	}
	wait := time.Duration(float64(timeout) * s.opts.TimeScale)
	if wait < time.Second {
		wait = time.Second
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		ok, changed := f.tryLock(shared)
		if ok {
			return func() { f.unlock(shared) }, nil
		}
		select {
		case <-changed:
		case <-deadline.C:
			return nil, lockTimeout(vmid)
		case <-s.ctx.Done():
			return nil, fmt.Errorf("lab is shutting down\n")
		}
	}
}

func lockTimeout(vmid int) error {
	return fmt.Errorf("can't lock file '/var/lock/qemu-server/lock-%d.conf' - got timeout\n", vmid)
}

// rollLocked draws a fault with probability rate. Called with s.mu held.
func (s *Server) rollLocked(rate float64) bool {
	return rate > 0 && s.rng.Float64() < rate
}
