package pve

import "context"

// cloneHold parks each clone in the middle of its copy, both of its locks
// held and its new VM showing "lock: clone", until the test closes release:
// so a test sees which clones hold a source's lock at once from events, not
// from sampling against a clock (a slow start under load is not a clone
// that waited for the lock). Set by tests only (holdClonesForTest).
type cloneHold struct {
	copying chan int      // each held clone's new VMID as it starts copying
	release chan struct{} // closed: the held clones go on
}

// waitCloneHold is runClone's stop when a test holds clones; it returns when
// the test releases them or the task is killed (its copy then fails as an
// interrupted one).
func (s *Server) waitCloneHold(ctx context.Context, newid int) {
	s.mu.Lock()
	h := s.cloneHold
	s.mu.Unlock()
	if h == nil {
		return
	}
	select {
	case h.copying <- newid:
	case <-ctx.Done():
		return
	}
	select {
	case <-h.release:
	case <-ctx.Done():
	}
}
