package talos

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// resetTimer is a fake node for two concurrent Deletes: both answer (a
// barrier: each Delete is past the probe before either resets), and each
// reset waits a while for the other one to start, so that two resets that
// may overlap do.
type resetTimer struct {
	arrived  sync.WaitGroup // the two probes
	mu       sync.Mutex
	inFlight int
	most     int
	started  chan struct{} // closed by the second reset to start
	once     sync.Once
}

func newResetTimer() *resetTimer {
	r := &resetTimer{started: make(chan struct{})}
	r.arrived.Add(2)

	return r
}

func (r *resetTimer) answers(context.Context, talosapi.Target, talosapi.Options, time.Duration) (bool, error) {
	r.arrived.Done()
	r.arrived.Wait()

	return true, nil
}

func (r *resetTimer) reset(context.Context, talosapi.Target, talosapi.ResetRequest, talosapi.Options) (talosapi.ResetResult, error) {
	r.mu.Lock()
	r.inFlight++
	r.most = max(r.most, r.inFlight)
	second := r.inFlight == 2
	r.mu.Unlock()

	if second {
		r.once.Do(func() { close(r.started) })
	}
	// Bounded: a reset that may not overlap the other must not wait for it.
	select {
	case <-r.started:
	case <-time.After(300 * time.Millisecond):
	}

	r.mu.Lock()
	r.inFlight--
	r.mu.Unlock()

	return talosapi.ResetResult{}, nil
}

// deleteTwo deletes two nodes at once (graceful resets, no control planes
// to delete their Node objects through) and returns how many resets ran at
// the same time at most.
func deleteTwo(t *testing.T, a, b *simCluster) int {
	t.Helper()

	timer := newResetTimer()
	r := &ConfigurationApply{opts: fastOpts, answers: timer.answers, reset: timer.reset}
	block := simtest.AddressBlock()

	var wg sync.WaitGroup
	errs := make([]error, 2)

	for i, c := range []*simCluster{a, b} {
		node := block(10 + i).String()
		st := ConfigurationApplyState{ConfigurationApplyArgs: ConfigurationApplyArgs{
			Node: node, ClientConfiguration: c.client,
			MachineConfiguration: c.config(talosconfig.RoleWorker, "/dev/sda", simtest.Version),
			Reset:                &ResetOnDelete{Enabled: ptrTo(true), Graceful: ptrTo(true)},
		}}

		wg.Go(func() {
			_, errs[i] = r.Delete(t.Context(), infer.DeleteRequest[ConfigurationApplyState]{ID: node, State: st})
		})
	}

	wg.Wait()

	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	return timer.most
}

// Two workers of one cluster removed by the same update drain one at a
// time, whatever dependencies the state keeps between their applies (a
// create registers none: the engine deletes them at the same time).
func TestNodesOfAClusterLeaveOneAtATime(t *testing.T) {
	t.Parallel()

	c := newSimCluster(t, simtest.AddressBlock()(1))
	if most := deleteTwo(t, c, c); most != 1 {
		t.Errorf("%d resets of one cluster's nodes ran at the same time", most)
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
	if most := deleteTwo(t, newSimCluster(t, block(1)), newSimClusterWith(t, block(2), other)); most != 2 {
		t.Errorf("the resets of two clusters' nodes did not overlap (%d at most): one waited for the other", most)
	}
}

// A node waiting for another node of its cluster to leave gives up when
// its delete's time runs out, and says why.
func TestLeavingWaitEndsWithTheDelete(t *testing.T) {
	t.Parallel()

	locks := &clusterLocks{held: map[string]chan struct{}{}}

	unlock, err := locks.lock(t.Context(), "ca", "10.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()

	ctx, cancel := context.WithCancel(t.Context())
	cancel()

	if _, err := locks.lock(ctx, "ca", "10.0.0.2"); err == nil {
		t.Fatal("a second node of the cluster went while the first was leaving")
	} else if want := "another node of its cluster was leaving"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}
