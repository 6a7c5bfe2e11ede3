package talos

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/blang/semver/v4"
)

// Talos's pre-upgrade etcd check, asked of the real members. Talos v1.12.5 runs it in Server.Upgrade
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
// not answer in time is "context deadline exceeded".
//
// Two ways of not answering. Nothing listens (the member's process is
// down): the lab waits the bound in simulated time (Options.TimeScale) and
// asks once more, as the client would have connected to a member that came
// back meanwhile. The port accepts but the member does not answer yet: etcd
// serves its client port only once the member has published itself through
// raft (embed/serve.go waits for ReadyNotify; server.go publishV3), so a
// member that has just started or joined holds the TLS handshake until
// then; the lab keeps asking until the bound, in real time, as the client
// does (etcd's timing is real at every time scale).
func (s *Sim) memberHealth(ctx context.Context, g *etcdGateway, urls []string) error {
	ctx, cancel := context.WithTimeout(ctx, etcdQuorumCheckTimeout)
	defer cancel()

	start := time.Now()

	for {
		err := g.readHealth(ctx, urls)

		switch {
		case err == nil:
			return nil
		case !errors.Is(err, errEtcdGateway):
			return err // etcd's own answer
		case errors.Is(err, syscall.ECONNREFUSED):
			if s.sleep(ctx, etcdQuorumCheckTimeout-time.Since(start)) && g.readHealth(ctx, urls) == nil {
				return nil
			}

			return s.healthTimedOut(ctx, urls, err)
		case !sleepCtx(ctx, 200*time.Millisecond):
			return s.healthTimedOut(ctx, urls, err)
		}
	}
}

// healthTimedOut is clientv3's error once the health read's bound ended,
// or the caller's when the caller gave up first; the lab's log keeps what
// the last attempt met (the client's error says only the deadline).
func (s *Sim) healthTimedOut(ctx context.Context, urls []string, last error) error {
	s.log.Info("etcd member did not answer the pre-upgrade health read", "urls", urls, "last", last)

	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}

	return context.DeadlineExceeded
}

// readHealth is clientv3's Get(ctx, "health") (linearizable, no
// require-leader metadata, repeated while etcd answers Unavailable: invoke)
// through the first of urls that answers.
func (g *etcdGateway) readHealth(ctx context.Context, urls []string) error {
	err := fmt.Errorf("%w: the member has no client URL", errEtcdGateway)

	for _, u := range urls {
		var out struct{}

		// "aGVhbHRo" is "health" (protojson bytes are base64).
		err = g.invoke(ctx, []string{u}, "/v3/kv/range", map[string]any{"key": "aGVhbHRo"}, &out, false)
		if !errors.Is(err, errEtcdGateway) {
			return err
		}
	}

	return err
}

// skipsEtcdCheckOnPreserve says whether a node of this Talos version skips
// its etcd pre-upgrade check (and the upgrade lock) when the request asks to
// preserve data. Upstream added `&& !in.GetPreserve()` to the check's
// condition in "fix: etcd client leak in the (legacy) Upgrade API"
// (siderolabs/talos 89e307e58, backported to v1.12.9 and v1.13.4; v1.14.1
// v1alpha1_server.go:517); v1.12.5 and v1.13.0–v1.13.3 check regardless.
func skipsEtcdCheckOnPreserve(version string) bool {
	v, err := semver.ParseTolerant(version)
	if err != nil {
		return false
	}

	switch {
	case v.Major != 1:
		return v.Major > 1
	case v.Minor >= 14:
		// v1.14.0-alpha.2 is the first pre-release with it; the lab
		// serves no earlier 1.14 pre-release.
		return true
	case v.Minor == 13:
		return v.Patch >= 4
	case v.Minor == 12:
		return v.Patch >= 9
	default:
		return false
	}
}
