package talos

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/pulumi-go-provider/infer"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// leaveRecorder is the fake nodes of concurrent Deletes, with their own
// locks (other tests' sim clusters share one CA). Every node answers. The
// first reset holds on until the other n-1 Deletes wait for their turn in
// the locks, or until a second reset starts beside it: with the lock,
// only the first can happen; without it, the second does. No timer
// decides anything.
type leaveRecorder struct {
	locks   *clusterLocks
	hold    int           // waiters the first reset waits for
	waiters chan struct{} // closed when hold Deletes wait
	beside  chan struct{} // closed when a reset starts while another runs

	mu        sync.Mutex
	waited    int
	inFlight  int
	most      int
	resets    int
	deadlines []time.Time // each reset's ctx deadline, in start order
	ends      []time.Time // each reset's end, in start order
	closeOnce sync.Once
}

func newLeaveRecorder(hold int) *leaveRecorder {
	r := &leaveRecorder{locks: newClusterLocks(), hold: hold, waiters: make(chan struct{}), beside: make(chan struct{})}
	r.locks.waiting = func(string, string) {
		r.mu.Lock()
		defer r.mu.Unlock()

		r.waited++
		if r.waited == r.hold {
			close(r.waiters)
		}
	}

	return r
}

func (r *leaveRecorder) answers(context.Context, talosapi.Target, talosapi.Options, time.Duration) (bool, error) {
	return true, nil
}

func (r *leaveRecorder) reset(ctx context.Context, _ talosapi.Target, _ talosapi.ResetRequest, _ talosapi.Options) (talosapi.ResetResult, error) {
	dl, _ := ctx.Deadline()

	r.mu.Lock()
	r.inFlight++
	r.most = max(r.most, r.inFlight)
	r.resets++
	first := r.resets == 1
	i := len(r.deadlines)
	r.deadlines = append(r.deadlines, dl)
	r.ends = append(r.ends, time.Time{})
	if r.inFlight > 1 {
		r.closeOnce.Do(func() { close(r.beside) })
	}
	r.mu.Unlock()

	if first {
		select {
		case <-r.waiters:
		case <-r.beside:
		case <-ctx.Done():
		}
	}

	r.mu.Lock()
	r.inFlight--
	r.ends[i] = time.Now()
	r.mu.Unlock()

	return talosapi.ResetResult{}, ctx.Err()
}

// deleteAll deletes one worker of each cluster at once (graceful resets,
// no control planes to delete their Node objects through).
func (r *leaveRecorder) deleteAll(t *testing.T, clusters ...*simCluster) []error {
	t.Helper()

	ca := &ConfigurationApply{opts: fastOpts, answers: r.answers, reset: r.reset, leaving: r.locks}
	block := simtest.AddressBlock()

	var wg sync.WaitGroup
	errs := make([]error, len(clusters))

	for i, c := range clusters {
		node := block(10 + i).String()
		st := ConfigurationApplyState{ConfigurationApplyArgs: ConfigurationApplyArgs{
			Node: node, ClientConfiguration: c.client,
			MachineConfiguration: c.config(talosconfig.RoleWorker, "/dev/sda", simtest.Version),
			Reset:                &ResetOnDelete{Enabled: ptrTo(true), Graceful: ptrTo(true)},
		}}

		wg.Go(func() {
			_, errs[i] = ca.Delete(t.Context(), infer.DeleteRequest[ConfigurationApplyState]{ID: node, State: st})
		})
	}

	wg.Wait()

	return errs
}

func noErrors(t *testing.T, errs []error) {
	t.Helper()

	for i, err := range errs {
		if err != nil {
			t.Errorf("delete %d: %v", i, err)
		}
	}
}

// Two workers of one cluster removed by the same update drain one at a
// time, whatever dependencies the state keeps between their applies (a
// create registers none: the engine deletes them at the same time).
func TestNodesOfAClusterLeaveOneAtATime(t *testing.T) {
	t.Parallel()

	c := newSimCluster(t, simtest.AddressBlock()(1))
	rec := newLeaveRecorder(1)
	noErrors(t, rec.deleteAll(t, c, c))

	if rec.most != 1 {
		t.Errorf("%d resets of one cluster's nodes ran at the same time", rec.most)
	}
	if rec.resets != 2 {
		t.Errorf("%d resets ran, want 2 (one per node)", rec.resets)
	}
}

// Nodes of two clusters do not wait for each other.
func TestNodesOfTwoClustersLeaveTogether(t *testing.T) {
	t.Parallel()

	other, err := talosconfig.NewSecrets(simtest.Version, applyTestNow)
	if err != nil {
		t.Fatal(err)
	}

	block := simtest.AddressBlock()
	rec := newLeaveRecorder(1)
	noErrors(t, rec.deleteAll(t, newSimCluster(t, block(1)), newSimClusterWith(t, block(2), other)))

	if rec.waited != 0 || rec.most != 2 {
		t.Errorf("the resets of two clusters' nodes did not overlap (%d at most, %d waited for its turn)", rec.most, rec.waited)
	}
	if rec.resets != 2 {
		t.Errorf("%d resets ran, want 2 (one per node)", rec.resets)
	}
}

// A node's delete timeout counts from its turn, not from the start of its
// wait: the k-th of five workers destroyed at once has its whole time for
// its reset (review s14a M1). Every Delete starts before the first reset
// ends, so a clock started at Delete start is earlier than the previous
// reset's end.
func TestLeavingNodeTimesItsDeleteFromItsTurn(t *testing.T) {
	t.Parallel()

	c := newSimCluster(t, simtest.AddressBlock()(1))
	rec := newLeaveRecorder(4)
	noErrors(t, rec.deleteAll(t, c, c, c, c, c))

	if rec.resets != 5 || rec.most != 1 {
		t.Fatalf("%d resets, %d at most at the same time; want 5 one at a time", rec.resets, rec.most)
	}

	for k := 1; k < 5; k++ {
		clock := rec.deadlines[k].Add(-defaultDeleteTimeout)
		if clock.Before(rec.ends[k-1]) {
			t.Errorf("reset %d: its delete's clock started %v before reset %d ended (its deadline %v)",
				k+1, rec.ends[k-1].Sub(clock), k, rec.deadlines[k].Format(time.RFC3339Nano))
		}
	}
}

// A node waiting for another node of its cluster to leave gives up when
// its request is cancelled, and says why.
func TestLeavingWaitEndsWithTheRequest(t *testing.T) {
	t.Parallel()

	locks := newClusterLocks()

	unlock, err := locks.lock(t.Context(), "ca", "10.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()

	ctx, cancel := context.WithCancel(t.Context())
	cancel()

	if _, err := locks.lock(ctx, "ca", "10.0.0.2"); err == nil {
		t.Fatal("a second node of the cluster went while the first was leaving")
	} else if want := "waiting for another node of its cluster to leave"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}

// A TalosCluster's node has neither timeouts nor customTimeouts: the
// advice names the command to run again, not an input it lacks.
func TestWaitAdviceFollowsTheURN(t *testing.T) {
	t.Parallel()

	const child = presource.URN("urn:pulumi:s::p::proxmoxtalos:index:TalosCluster$proxmoxtalos:talos:ConfigurationApply::demo-workers-3")
	if got := waitAdvice(framework.ContextWithURN(t.Context(), child)); strings.Contains(got, "timeout") || !strings.Contains(got, "pulumi destroy") {
		t.Errorf("advice for a TalosCluster's node: %s", got)
	}

	const own = presource.URN("urn:pulumi:s::p::proxmoxtalos:talos:ConfigurationApply::n1")
	if got := waitAdvice(framework.ContextWithURN(t.Context(), own)); !strings.Contains(got, "customTimeouts") {
		t.Errorf("advice for a resource of the user's own: %s", got)
	}
}

// The cluster's key is its CA certificate, however its PEM is written.
func TestClusterKeyIsTheCertificate(t *testing.T) {
	t.Parallel()

	c := newSimCluster(t, simtest.AddressBlock()(1))
	creds, err := c.client.credentials()
	if err != nil {
		t.Fatal(err)
	}

	crlf := []byte(strings.ReplaceAll(string(creds.CA), "\n", "\r\n") + "\r\n")
	if clusterKey(creds.CA) != clusterKey(crlf) {
		t.Error("the same CA with CRLF line ends names another cluster")
	}

	other, err := talosconfig.NewSecrets(simtest.Version, applyTestNow)
	if err != nil {
		t.Fatal(err)
	}

	oc, err := newSimClusterWith(t, simtest.AddressBlock()(2), other).client.credentials()
	if err != nil {
		t.Fatal(err)
	}

	if clusterKey(creds.CA) == clusterKey(oc.CA) {
		t.Error("two clusters' CAs name one cluster")
	}
}
