package vmwatch

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
)

// Several operations that wait on one stopped VM at once (the health gates
// of a create's workers all name the control planes) share its looks, so
// they reach the verdict together, at the look that ends the grace (review
// 2026-11-28 22:20 finding 1: with the streak kept per watcher, the one
// that asked first took every look and the others' verdicts came 45 s
// apart, the fifth at 3m32s).
func TestWatchersOfOneBookReachTheVerdictTogether(t *testing.T) {
	now := t0
	src := &fakeSource{state: "stopped", now: &now}
	book := NewBook()
	const n = 5
	ws := make([]*Watcher, n)
	for i := range ws {
		ws[i] = New(src, book, []VM{{Address: "10.5.0.2", VMID: 102}}, Policy{})
		ws[i].now = func() time.Time { return now }
	}

	// every watcher fails an attempt on the node each second, in turn;
	// defaults: looks at 2s, 17s and 32s (seen stopped for 30s, the grace)
	at := make([]time.Duration, n)
	done := 0
	for ; done < n && now.Sub(t0) < 10*time.Minute; now = now.Add(time.Second) {
		for i, w := range ws {
			if at[i] != 0 {
				continue
			}
			err := w.Down(context.Background(), fmt.Sprintf("10.5.0.2:%d", 50000+i))
			var md *talosapi.MachineDownError
			if errors.As(err, &md) {
				at[i] = now.Sub(t0)
				done++
				if want := fmt.Sprintf("10.5.0.2:%d", 50000+i); md.Node != want {
					t.Errorf("watcher %d's verdict names node %q, want its own %q", i, md.Node, want)
				}
			}
		}
	}
	for i, d := range at {
		if d != 32*time.Second {
			t.Errorf("watcher %d: verdict at %s, want 32s (the third look, shared by all)", i, d)
		}
	}
	if src.looks != 3 {
		t.Errorf("%d looks, want 3 (2s, 17s, 32s) for the %d watchers", src.looks, n)
	}

	// the node answers: the verdict and the streak are gone for every
	// watcher, and a new silence needs a new grace
	ws[0].Answered("10.5.0.2")
	now = now.Add(time.Minute)
	start := now
	for ; now.Sub(start) < 31*time.Second; now = now.Add(time.Second) {
		for i, w := range ws {
			if err := w.Down(context.Background(), "10.5.0.2"); err != nil {
				t.Fatalf("watcher %d, %s into a new silence: %v, want no verdict before the grace", i, now.Sub(start), err)
			}
		}
	}
}
