package talosapi

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// fakeHedge is the hedge timer on a clock the test moves: it fires only
// when the test says, and remembers when it was last due.
type fakeHedge struct {
	mu       sync.Mutex
	now, due time.Duration
	c        chan time.Time
}

func (f *fakeHedge) C() <-chan time.Time { return f.c }
func (f *fakeHedge) Stop()               {}

func (f *fakeHedge) Reset(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()

	f.due = f.now + d
}

func (f *fakeHedge) at(now time.Duration) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()

	f.now = now

	return f.due
}

// fakeReaders answers for each control plane what the test sends it;
// asked says, in order, which control plane was asked.
type fakeReaders struct {
	asked   chan string
	replies map[string]chan error
}

func withFakes(t *testing.T, cps ...string) (*fakeHedge, *fakeReaders) {
	h := &fakeHedge{c: make(chan time.Time)}
	r := &fakeReaders{asked: make(chan string, len(cps)), replies: map[string]chan error{}}

	for _, cp := range cps {
		r.replies[cp] = make(chan error, 1)
	}

	oldRead, oldHedge := readMembersFrom, newHedge
	t.Cleanup(func() { readMembersFrom, newHedge = oldRead, oldHedge })

	newHedge = func(d time.Duration) hedgeTimer { h.Reset(d); return h }
	readMembersFrom = func(ctx context.Context, tg Target, _ Options, _ time.Duration) (map[string]string, error) {
		r.asked <- tg.Node

		select {
		case err := <-r.replies[tg.Node]:
			if err != nil {
				return nil, err
			}

			return map[string]string{"via": tg.Node}, nil
		case <-ctx.Done(): // a paused control plane: it never answers
			return nil, ctx.Err()
		}
	}

	return h, r
}

func readAsync(cps []string, perCP time.Duration) <-chan map[string]string {
	out := make(chan map[string]string, 1)

	go func() {
		m, _ := ReadMembers(context.Background(), cps, &Credentials{}, Options{}, perCP)
		out <- m
	}()

	return out
}

// A control plane that hangs (its API server on a paused etcd member) is
// joined by the next when the hedge fires, and the next one's answer is
// used while the first is still asked: before the hedge, the next was
// asked only after the first had used all of perCP (this test then hangs
// until go test's -timeout).
func TestReadMembersHedgesPastAHangingControlPlane(t *testing.T) {
	h, r := withFakes(t, "cp2", "cp1", "cp3")
	res := readAsync([]string{"cp2", "cp1", "cp3"}, time.Minute)

	if got := <-r.asked; got != "cp2" {
		t.Fatalf("asked %s first, want cp2", got)
	}

	h.c <- time.Time{} // cp2 has not answered within the hedge interval

	if got := <-r.asked; got != "cp1" {
		t.Fatalf("asked %s second, want cp1", got)
	}

	r.replies["cp1"] <- nil

	if m := <-res; m["via"] != "cp1" {
		t.Errorf("members %v, want cp1's answer while cp2 still hangs", m)
	}

	if len(r.asked) != 0 {
		t.Errorf("also asked %s, want only cp2 and cp1", <-r.asked)
	}
}

// An ask made because an answer failed restarts the hedge interval, so a
// third control plane is not asked at once by the interval the first ask
// started (each ask mints a new admin certificate).
func TestReadMembersRestartsTheHedgeAfterAFailedAnswer(t *testing.T) {
	const perCP = 4 * time.Minute

	interval := perCP / 4

	h, r := withFakes(t, "cp1", "cp2", "cp3")
	res := readAsync([]string{"cp1", "cp2", "cp3"}, perCP)

	<-r.asked // cp1

	failedAt := interval * 9 / 10
	if due := h.at(failedAt); due != interval {
		t.Fatalf("hedge due at %v after the first ask, want %v", due, interval)
	}

	r.replies["cp1"] <- errors.New("connection refused")

	if got := <-r.asked; got != "cp2" {
		t.Fatalf("asked %s after cp1 failed, want cp2", got)
	}

	if due := h.at(failedAt); due != failedAt+interval {
		t.Errorf("after cp1 failed at %v and cp2 was asked, the hedge is due at %v, want %v (a full interval later)", failedAt, due, failedAt+interval)
	}

	r.replies["cp2"] <- nil

	if m := <-res; m["via"] != "cp2" {
		t.Errorf("members %v, want cp2's answer", m)
	}
}
