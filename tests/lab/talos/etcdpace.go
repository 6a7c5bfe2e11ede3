package talos

import (
	"hash/fnv"
	"math/rand/v2"
	"time"
)

// How far apart the control planes of a new cluster join etcd.
//
// etcd lets them in one at a time: a second learner is refused ("too many
// learner members in cluster": max-learners defaults to 1, and Talos does
// not set it), and once the learner is promoted any member add is refused
// ("unhealthy cluster") until every voting member's peer connection has
// been up HealthInterval (etcd v3.6 server/etcdserver/server.go
// mayAddMember, isConnectedFullySince; StrictReconfigCheck is on by
// default). Both are the real etcd's refusals in the lab; HealthInterval is
// etcd's own clock, not the lab's time scale.
const etcdHealthInterval = 5 * time.Second

// etcdStartSpread bounds how much later than etcdJoinDuration after its CRI
// a control plane's etcd service makes its first join attempt. Before it,
// the service pulls the etcd image and waits for its own steps
// (siderolabs/talos v1.14.0-rc.1 internal/app/machined/pkg/system/services/
// etcd.go PreFunc: image.PullWithRetriesAndTimeout, then the etcd spec and
// buildInitialCluster, whose first attempt has no jitter before it), which
// take different times on different nodes. The lab booted every control
// plane in exactly equal times, so three of them proposed their first
// MemberAddAsLearner in the same reconcile pass and raft dropped two (see
// below): a 30 s stall real nodes rarely meet. 2 s is the lab's choice, not
// a measurement: many times its 100 ms reconcile tick, and under Talos's
// 3 s retry units.
const etcdStartSpread = 2 * time.Second

// etcdStartOffset is a node's share of etcdStartSpread at time scale 1, in
// [0, etcdStartSpread), fixed by its VM name so that a run can be
// repeated.
func etcdStartOffset(vmName string) time.Duration {
	h := fnv.New64a()
	_, _ = h.Write([]byte(vmName))

	return time.Duration(h.Sum64() % uint64(etcdStartSpread))
}

// etcdFirstJoin is when, after its configured boot, the control plane on VM
// vmName first tries to join etcd, at time scale 1.
func etcdFirstJoin(vmName string) time.Duration {
	return criDuration + etcdJoinDuration + etcdStartOffset(vmName)
}

// Talos's pacing of join attempts (siderolabs/talos v1.14.0-rc.1 and
// v1.13.9 internal/app/machined/pkg/system/services/etcd.go
// buildInitialCluster: retry.Constant with WithUnits(3s) and
// WithJitter(1s); siderolabs/go-retry v0.3.3 ConstantTicker.Tick waits the
// units plus a random [0, jitter)).
//
// The pacing matters beyond the wait: each add refused for a learner still
// waiting for its promotion goes through raft ("too many learner members"
// is decided when the change applies), and raft drops a configuration
// change proposed while another is unapplied (go.etcd.io/raft stepLeader:
// "possible unapplied conf change"), so an add or the promotion that meets
// another waits for its caller's deadline (etcd server.go configure):
// Talos's 30 s attempt timeout. Retrying every second, as the lab did,
// three waiting control planes proposed three times as often as Talos and
// met a promotion in about one create of 5 control planes in two.
const (
	etcdJoinRetryUnits  = 3 * time.Second
	etcdJoinRetryJitter = time.Second
	// etcdJoinRetryFloor: the lab scales Talos's pacing with its time
	// scale, but never retries sooner than this: at time scale 0 every
	// reconcile would propose an add.
	etcdJoinRetryFloor = time.Second
)

// joinRetryDelay is the wait before the next join attempt at time scale
// scale, with jitter drawn from [0, etcdJoinRetryJitter).
func joinRetryDelay(scale float64, jitter time.Duration) time.Duration {
	return max(time.Duration(float64(etcdJoinRetryUnits+jitter)*scale), etcdJoinRetryFloor)
}

// nextJoinRetry is when a node whose join attempt just failed tries again;
// the reconciler is nudged then, so that the attempt goes at its own time
// and not with others at the next 100 ms tick.
func (s *Sim) nextJoinRetry() time.Time {
	d := joinRetryDelay(s.opts.TimeScale, rand.N(etcdJoinRetryJitter))
	time.AfterFunc(d+time.Millisecond, s.nudge)

	return time.Now().Add(d)
}

// promotePace is Talos's pacing of MemberPromote attempts, which starts as
// the learner starts; the first attempt is refused ("can only promote a
// learner member which is in sync with leader"), so the next join waits for
// the second.
type promotePace struct {
	units, jitter, attemptTimeout time.Duration
}

// promotePaceOf is the pacing of the Talos version the node runs.
// v1.12.x, v1.13.x and v1.14.0-rc.1: 15 s units plus up to 1 s jitter, each
// attempt bounded at 30 s (services/etcd.go promoteMember, at v1.12.0,
// v1.13.0, v1.14.0-rc.1). siderolabs/talos f80fd0985 (PR #14098, on main
// 2026-08-21, after rc.1): 2 s plus up to 1 s, each attempt bounded at 1 min.
// ASSUMED: v1.14.x releases carry f80fd0985; the mirror here has no v1.14.0
// or v1.14.1 tag to check. If they do not, 1.14 nodes wait 15 s too, and
// the lab's 1.14 joins and the critical path's 5 s per extra join
// (EtcdNextJoin) are about 11 s too short each.
func promotePaceOf(version string) promotePace {
	if m, ok := minorOf(version); ok && m >= 14 {
		return promotePace{units: 2 * time.Second, jitter: time.Second, attemptTimeout: time.Minute}
	}

	return promotePace{units: 15 * time.Second, jitter: time.Second, attemptTimeout: 30 * time.Second}
}

// retryDelay is the wait before the next promotion attempt at time scale
// scale, with jitter drawn from [0, p.jitter); like the join's, never under
// etcdJoinRetryFloor.
func (p promotePace) retryDelay(scale float64, jitter time.Duration) time.Duration {
	return max(time.Duration(float64(p.units+jitter)*scale), etcdJoinRetryFloor)
}

// etcdNextJoin is how far apart control planes running version join at
// time scale 1: the next add is let in once the learner is promoted (at
// its second attempt, the pace's bound) and etcd's HealthInterval has
// passed since its peer connection came up.
func etcdNextJoin(version string) time.Duration {
	p := promotePaceOf(version)

	return max(etcdHealthInterval, p.units+p.jitter)
}
