package talos

import (
	"context"
	"encoding/pem"
	"fmt"
	"strings"
	"sync"
)

// Nodes of one cluster leave it one at a time. A node's reset (cordon and
// drain, leave etcd, wipe) runs in its ConfigurationApply's Delete, and the
// engine deletes resources with no dependency between them at the same time
// (pulumi pkg v3.274.1 resource/deploy/step_generator.go ScheduleDeletes:
// one antichain of the old state's dependencies at a time). A TalosCluster's
// create registers its workers' applies without dependencies between them,
// so a destroy or scale-down right after it has no order between them in the
// state. Every delete of an update runs in one provider process: a lock per
// cluster there drains the removed nodes one after another, whatever the
// state's dependencies, as the preview's summary says.
var leaving = newClusterLocks()

// clusterLocks are one lock per cluster, by key.
type clusterLocks struct {
	mu   sync.Mutex
	held map[string]chan struct{} // a one-slot semaphore per key
	// waiting, when set, is called when a node has to wait for its turn
	// (tests).
	waiting func(key, node string)
}

func newClusterLocks() *clusterLocks {
	return &clusterLocks{held: map[string]chan struct{}{}}
}

// clusterKey names a node's cluster by its Talos API CA certificate (DER):
// the same CA written differently (line endings, a trailing newline) is one
// cluster, and clusters sharing one secrets bundle count as one.
func clusterKey(caPEM []byte) string {
	if b, _ := pem.Decode(caPEM); b != nil {
		return string(b.Bytes)
	}

	return strings.TrimSpace(string(caPEM))
}

// lock waits until no other node of the cluster (key) is leaving, or ctx
// ends; unlock lets the next one go. The caller starts its own operation's
// clock only once it has its turn: the wait is bounded by ctx (the engine's
// customTimeouts, a cancel) and by the holders' own timeouts.
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
	default:
	}

	if l.waiting != nil {
		l.waiting(key, node)
	}

	select {
	case sem <- struct{}{}:
		return func() { <-sem }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("node %s was not reset: it was waiting for another node of its cluster to leave "+
			"(nodes leave one at a time, each drained first) when the delete was cancelled or its customTimeouts ran out: %w", node, ctx.Err())
	}
}
