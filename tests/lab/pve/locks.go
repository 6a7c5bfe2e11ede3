package pve

import (
	"fmt"
	"time"
)

// lockVM takes the flock qemu-server holds on
// /var/lock/qemu-server/lock-<vmid>.conf while it changes a VM
// (PVE::AbstractConfig::lock_config_full). Waiting longer than timeout
// fails with PVE::Tools::lock_file_full's "can't lock file '...' - got
// timeout". The wait is scaled by the time scale but lasts at least a
// second, so concurrent fast tasks still serialise instead of failing.
// Must be called without s.mu held.
func (s *Server) lockVM(vmid int, timeout time.Duration) (func(), error) {
	s.mu.Lock()
	ch, ok := s.flocks[vmid]
	if !ok {
		ch = make(chan struct{}, 1)
		s.flocks[vmid] = ch
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
	select {
	case ch <- struct{}{}:
	case <-time.After(wait):
		return nil, lockTimeout(vmid)
	case <-s.ctx.Done():
		return nil, fmt.Errorf("lab is shutting down\n")
	}
	return func() { <-ch }, nil
}

func lockTimeout(vmid int) error {
	return fmt.Errorf("can't lock file '/var/lock/qemu-server/lock-%d.conf' - got timeout\n", vmid)
}

// rollLocked draws a fault with probability rate. Called with s.mu held.
func (s *Server) rollLocked(rate float64) bool {
	return rate > 0 && s.rng.Float64() < rate
}
