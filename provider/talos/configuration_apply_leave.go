package talos

import (
	"context"
	"fmt"
	"sync"
)

// Nodes of one cluster leave it one at a time. A node's reset (cordon and
// drain, leave etcd, wipe) runs in its ConfigurationApply's Delete, and the
// engine deletes resources with no dependency between them at the same time
// (pulumi pkg v3.274.1 resource/deploy/step_generator.go ScheduleDeletes:
// one antichain of the old state's dependencies at a time). A TalosCluster's
// create registers its workers' applies without dependencies between them,
// and a no-op update keeps what the state holds, so the state alone does not
// order removals. Every delete of an update runs in one provider process:
// a lock per cluster there drains the removed nodes one after another,
// whatever the state's dependencies, as the preview's summary says.
var leaving = &clusterLocks{held: map[string]chan struct{}{}}

// clusterLocks are one lock per cluster, by key.
type clusterLocks struct {
	mu   sync.Mutex
	held map[string]chan struct{} // a one-slot semaphore per key
}

// lock waits until no other node of the cluster (key) is leaving, or ctx
// ends; unlock lets the next one go. A node's reset has no timeout of its
// own beyond the delete's, so the wait shares that bound.
func (l *clusterLocks) lock(ctx context.Context, key, node string) (unlock func(), err error) {
	l.mu.Lock()
	sem := l.held[key]
	if sem == nil {
		sem = make(chan struct{}, 1)
		l.held[key] = sem
	}
	l.mu.Unlock()

	select {
	case sem <- struct{}{}:
		return func() { <-sem }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("node %s: the delete's time ran out while another node of its cluster was leaving "+
			"(nodes leave one at a time, each drained first); run the update again, or raise timeouts.delete: %w", node, ctx.Err())
	}
}
