package cluster

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
)

// fakeDirect is a direct reader that records the deadline it was given per
// node and answers what readNodes' reader would.
type fakeDirect struct {
	mu        sync.Mutex
	deadlines map[string]time.Time
}

func (f *fakeDirect) read(ctx context.Context, node string, _ *talosapi.Credentials) (runningNode, error) {
	dl, ok := ctx.Deadline()
	if !ok {
		return runningNode{}, errors.New("no deadline")
	}
	f.mu.Lock()
	f.deadlines[node] = dl
	f.mu.Unlock()
	return runningNode{Config: "direct " + node, TalosVersion: "v1.14.1"}, nil
}

func throughState() *plan.State {
	return &plan.State{Nodes: []plan.NodeState{
		{Name: "cp1", Role: plan.RoleControlPlane, Address: "10.0.0.2", Power: plan.PowerRunning},
		{Name: "w1", Role: plan.RoleWorker, Address: "10.0.0.10", Power: plan.PowerRunning},
	}}
}

// A node the control plane does not answer for is asked directly with a
// full readTimeout from the moment the attempt through the control plane
// gave up, whatever that attempt used of its bound (readNodes gave it
// readTimeout; a node whose apid comes back late in it must still be read).
// The attempt through the control plane is bounded by its own bound.
func TestReadNodesThroughFallbackGetsAFullReadTimeout(t *testing.T) {
	t.Parallel()
	const attempt = 50 * time.Millisecond // stands for throughAttempt
	var (
		ended       time.Time // when the attempt through the control plane gave up
		attemptLeft time.Duration
	)
	direct := &fakeDirect{deadlines: map[string]time.Time{}}
	got := readNodesVia(context.Background(), throughState(), &talosapi.Credentials{}, throughReads{
		first: func(context.Context, string, *talosapi.Credentials) (runningNode, *talosapi.Conn, error) {
			return runningNode{Config: "cp1", TalosVersion: "v1.14.1"}, &talosapi.Conn{Mode: talosapi.ModeSecure}, nil
		},
		through: func(ctx context.Context, _ *talosapi.Conn, node string) (runningNode, error) {
			start := time.Now()
			dl, _ := ctx.Deadline()
			attemptLeft = dl.Sub(start)
			<-ctx.Done() // the proxy never answers: the attempt eats its whole bound
			ended = time.Now()
			return runningNode{}, errors.New("node " + node + " through 10.0.0.2: " + ctx.Err().Error())
		},
		direct:  direct.read,
		wait:    time.Hour, // the connection comes at once; this bound is not what is tested
		attempt: attempt,
	})

	if r := got["cp1"]; r.err != nil || r.running.Config != "cp1" {
		t.Errorf("cp1: %+v (%v), want its own reading", r.running, r.err)
	}
	if r := got["w1"]; r.err != nil || r.running.Config != "direct 10.0.0.10" {
		t.Errorf("w1: %+v (%v), want the direct reading", r.running, r.err)
	}
	if len(direct.deadlines) != 1 {
		t.Fatalf("asked directly: %v, want w1 only", direct.deadlines)
	}
	if attemptLeft > attempt {
		t.Errorf("the attempt through the control plane had %v, want at most its bound %v", attemptLeft, attempt)
	}
	dl := direct.deadlines["10.0.0.10"]
	if left := dl.Sub(ended); left < readTimeout {
		t.Errorf("w1's direct read had %v after the attempt through the control plane gave up, want a full readTimeout (%v) as readNodes gives it",
			left, readTimeout)
	}
}

// A node that waited for the connection to the control plane in vain (no
// connection within the wait) is asked directly with a full readTimeout
// too, not what the wait left of it.
func TestReadNodesThroughFallbackAfterTheWaitGetsAFullReadTimeout(t *testing.T) {
	t.Parallel()
	const wait = 200 * time.Millisecond // stands for throughWait
	release := make(chan struct{})
	direct := &fakeDirect{deadlines: map[string]time.Time{}}
	start := time.Now()
	got := readNodesVia(context.Background(), throughState(), &talosapi.Credentials{}, throughReads{
		first: func(ctx context.Context, _ string, _ *talosapi.Credentials) (runningNode, *talosapi.Conn, error) {
			<-release // the control plane answers only after the worker was asked directly
			return runningNode{Config: "cp1"}, &talosapi.Conn{Mode: talosapi.ModeSecure}, nil
		},
		through: func(context.Context, *talosapi.Conn, string) (runningNode, error) {
			return runningNode{}, errors.New("not expected: the wait was over")
		},
		direct: func(ctx context.Context, node string, creds *talosapi.Credentials) (runningNode, error) {
			defer close(release)
			return direct.read(ctx, node, creds)
		},
		wait:    wait,
		attempt: time.Hour,
	})

	if r := got["w1"]; r.err != nil || r.running.Config != "direct 10.0.0.10" {
		t.Errorf("w1: %+v (%v), want the direct reading", r.running, r.err)
	}
	if r := got["cp1"]; r.err != nil || r.running.Config != "cp1" {
		t.Errorf("cp1: %+v (%v), want its own reading", r.running, r.err)
	}
	// The direct read starts after the wait, so a full readTimeout of its
	// own ends at least wait+readTimeout after start.
	if left := direct.deadlines["10.0.0.10"].Sub(start); left < wait+readTimeout {
		t.Errorf("w1's direct read ends %v after the reading started, want at least the wait (%v) plus a full readTimeout (%v)",
			left, wait, readTimeout)
	}
}

// The whole reading stays bounded: throughMax is the wait, one attempt
// through the control plane and one direct read.
func TestThroughMaxIsTheSumOfItsParts(t *testing.T) {
	t.Parallel()
	if throughMax != 14500*time.Millisecond {
		t.Errorf("throughMax %v, want throughWait %v + throughAttempt %v + readTimeout %v = 14.5 s (the docs say so)",
			throughMax, throughWait, throughAttempt, readTimeout)
	}
}
