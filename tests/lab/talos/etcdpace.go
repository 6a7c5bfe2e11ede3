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

// etcdPromoteRetry is the lab's pause between promotion attempts, the first
// made as the learner starts. Talos pauses 15 s (v1.14.0-rc.1
// promoteMember: WithUnits(15s), WithJitter(1s)); siderolabs/talos
// f80fd0985 (on main after rc.1, fixing issue 14097) makes it 2 s. Within
// etcdHealthInterval either way but the first, it does not decide when the
// next control plane joins.
const etcdPromoteRetry = time.Second

// etcdPromoteAttemptTimeout bounds one promotion attempt as Talos does
// (v1.14.0-rc.1 services/etcd.go promoteMember: WithAttemptTimeout(30s)):
// a promotion that raft dropped (see above) is tried again after it, not
// after the lab's own 45 s bound on an etcd call.
const etcdPromoteAttemptTimeout = 30 * time.Second
