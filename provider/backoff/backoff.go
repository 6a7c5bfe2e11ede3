// Package backoff is the one retry/poll helper of the provider (Loop) and
// its pause policy (Policy): Proxmox API retries and task waits (pve), Talos
// waits (talosapi), Image Factory requests (imagefactory) and the guest
// agent and node waits (proxmox). Loop pauses, counts, bounds and notices the
// context's end; the decisions stay with each caller, next to the error
// classification it relies on: what is worth another attempt, when to give
// up, what to report. Pure apart from the timer; no Pulumi types.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Policy is how the pauses between attempts grow: the first is Initial, each
// next one doubles, up to Max (Max below Initial: Initial throughout). With
// Jitter each pause is drawn from [p/2, p], so that loops started together
// (parallel creates hitting the same lock) do not retry in lock step.
type Policy struct {
	Initial, Max time.Duration
	Jitter       bool
}

// Pauses are one loop's pauses under a Policy.
type Pauses struct {
	policy Policy
	next   time.Duration
}

// Start begins a loop's pauses.
func (p Policy) Start() *Pauses {
	return &Pauses{policy: p, next: p.Initial}
}

// Next is the pause to take now; the one after it is twice as long, up to
// the policy's Max.
func (s *Pauses) Next() time.Duration {
	pause := s.next
	if s.policy.Jitter && pause > 0 {
		pause = pause/2 + time.Duration(rand.Int64N(int64(pause/2)+1))
	}
	s.next = min(s.next*2, max(s.policy.Max, s.policy.Initial))
	return pause
}

// Sleep pauses for d, or until ctx is done: then it returns ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
