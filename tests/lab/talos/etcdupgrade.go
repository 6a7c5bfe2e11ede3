package talos

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Talos's pre-upgrade etcd check, asked of the real members
// (Options.RealEtcd). Talos v1.12.5 runs it in Server.Upgrade
// (internal/app/machined/internal/server/v1alpha1/v1alpha1_server.go) on a
// control plane unless the request forces the upgrade:
// etcd.Client.ValidateForUpgrade (internal/pkg/etcd/etcd.go) lists the
// members through the control plane endpoints, refuses two members, then,
// member by member, refuses one that has not started (no name yet) and one
// that fails validateMemberHealth: a new client of that member's own client
// URLs reads the key "health" (ValidateQuorum: a linearizable Get, so
// through the leader's read index) within QuorumCheckTimeout.
//
// The check reads a key, not Maintenance.Status, and that matters: etcd
// v3.6.6 answers Status from the member's own state without raft
// (server/etcdserver/api/v3rpc/maintenance.go), so a member of a cluster
// without a leader would pass, and nothing in it waits for a peer: a peer
// that vanished cannot make it hang. What it can wait for is local: the
// backend's read-transaction lock (StorageVersion, server.go), which each
// backend commit holds while bolt writes (storage/backend/batch_tx.go
// batchTxBuffered.commit), the membership lock (IsLearner), and, before a
// member serves at all (embed/serve.go waits for ReadyNotify), the TLS
// handshake. A 5 s bound on Status was the lab's own, not Talos's.
//
// The upgrade mutex Talos takes before the check (tryLockUpgradeMutex, a
// concurrency session on the endpoints) is not simulated.

// etcdQuorumCheckTimeout is Talos's etcd.QuorumCheckTimeout.
const etcdQuorumCheckTimeout = 15 * time.Second

// validateForUpgrade is Client.ValidateForUpgrade against the members, with
// Talos's texts.
func (n *Node) validateForUpgrade(ctx context.Context) error {
	urls, ec, err := realNodeEtcd{n: n}.remote(ctx)
	if err != nil {
		return fmt.Errorf("failed to create etcd client: %w", err)
	}

	wrap := func(err error) error { return fmt.Errorf("error validating etcd for upgrade: %w", err) }

	list, err := ec.real.memberList(ctx, urls)
	if err != nil {
		return wrap(err)
	}

	if len(list) == 2 {
		return wrap(fmt.Errorf("etcd member count(%d) is insufficient to maintain quorum if upgrade commences", len(list)))
	}

	for _, m := range list {
		if m.Name == "" {
			return wrap(fmt.Errorf("etcd member %016x is not started, all members must be running to perform an upgrade", uint64(m.ID)))
		}

		if err := n.sim.memberHealth(ctx, ec.real, m.ClientURLs); err != nil {
			return wrap(fmt.Errorf("etcd member %016x is not healthy; all members must be healthy to perform an upgrade: %w", uint64(m.ID), err))
		}
	}

	return nil
}

// memberHealth is Talos's validateMemberHealth: the read of "health"
// through the member's client URLs, bounded by QuorumCheckTimeout.
// clientv3 waits for a connection (its calls are WaitForReady,
// client/v3/options.go) and maps the expired deadline to the context's
// error (ContextError, client/v3/client.go): a member that is down or does
// not answer is "context deadline exceeded". For a member that refuses the
// connection the lab waits that bound in simulated time (Options.TimeScale)
// and asks once more, as the client would have connected to a member that
// came back meanwhile.
func (s *Sim) memberHealth(ctx context.Context, g *etcdGateway, urls []string) error {
	ctx, cancel := context.WithTimeout(ctx, etcdQuorumCheckTimeout)
	defer cancel()

	start := time.Now()

	err := g.readHealth(ctx, urls)
	if errors.Is(err, errEtcdGateway) && s.sleep(ctx, etcdQuorumCheckTimeout-time.Since(start)) {
		err = g.readHealth(ctx, urls)
	}

	switch {
	case err == nil:
		return nil
	case errors.Is(err, errEtcdGateway), errors.Is(err, context.DeadlineExceeded):
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return ctx.Err()
		}

		return context.DeadlineExceeded
	default:
		return err // etcd's own answer
	}
}

// readHealth is clientv3's Get(ctx, "health") (linearizable, no
// require-leader metadata) through the first of urls that answers.
func (g *etcdGateway) readHealth(ctx context.Context, urls []string) error {
	err := fmt.Errorf("%w: the member has no client URL", errEtcdGateway)

	for _, u := range urls {
		var out struct{}

		// "aGVhbHRo" is "health" (protojson bytes are base64).
		err = g.call(ctx, u, "/v3/kv/range", map[string]any{"key": "aGVhbHRo"}, &out, false)
		if !errors.Is(err, errEtcdGateway) {
			return err
		}
	}

	return err
}
