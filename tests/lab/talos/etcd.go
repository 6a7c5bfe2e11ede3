package talos

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// etcd error texts as etcd v3.6 returns them (go.etcd.io/etcd/api/v3/v3rpc/rpctypes).
var (
	errEtcdNotEnoughStarted = errors.New("etcdserver: re-configuration failed due to not enough started members")
	errEtcdUnhealthy        = errors.New("etcdserver: unhealthy cluster")
	errEtcdNoLeader         = errors.New("etcdserver: no leader")
	errEtcdMemberNotFound   = errors.New("etcdserver: member not found")
	errEtcdPeerURLExist     = errors.New("etcdserver: Peer URLs already exists")
)

// etcdCluster is one simulated etcd cluster: its members and which of them
// are running right now. Membership changes follow etcd's reconfiguration
// checks (strict-reconfig-check, on by default).
type etcdCluster struct {
	id      uint64
	cluster string // the Talos cluster.id it was bootstrapped for
	members []*etcdMember
	// hadQuorum: a majority of members ran at some point (quorum.go).
	hadQuorum bool
	leaderID  uint64      // the member that leads while it runs (leader)
	alarms    []EtcdAlarm // active alarms (SetEtcdAlarm), cleared by a disarm
	// healthInterval is etcd's HealthInterval (5 s, etcdserver/server.go),
	// scaled: a member accepts a member add only once it has been
	// connected to every voting member for that long.
	healthInterval time.Duration
	// real: the members are real etcd processes (Options.RealEtcd) and this
	// is the snapshot pollEtcd publishes; gen counts the membership changes
	// the lab made, so that a poll that raced with one is dropped.
	real *etcdGateway
	gen  uint64
}

type etcdMember struct {
	id      uint64
	name    string // hostname of the node
	addr    string // node address: peer https://addr:2380, client https://addr:2379
	learner bool
	started bool      // has published its name (etcd IsStarted)
	running bool      // the node's etcd process is up right now
	since   time.Time // when it last started running (healthInterval)
	wiped   bool      // the node's etcd data was wiped (reset): it never runs again
}

func newEtcdCluster() *etcdCluster {
	return &etcdCluster{id: rand.Uint64()}
}

func (c *etcdCluster) member(id uint64) *etcdMember {
	for _, m := range c.members {
		if m.id == id {
			return m
		}
	}

	return nil
}

func (c *etcdCluster) voting() []*etcdMember {
	var out []*etcdMember

	for _, m := range c.members {
		if !m.learner {
			out = append(out, m)
		}
	}

	return out
}

// leader is the member leading the cluster: it keeps leading while it runs;
// otherwise, with quorum, the running voting member with the lowest ID.
func (c *etcdCluster) leader() *etcdMember {
	if !c.hasQuorum() {
		return nil
	}

	if c.real != nil {
		return c.member(c.leaderID) // etcd's own answer (pollEtcd)
	}

	if m := c.member(c.leaderID); m != nil && m.running && !m.learner {
		return m
	}

	var l *etcdMember

	for _, m := range c.voting() {
		if m.running && (l == nil || m.id < l.id) {
			l = m
		}
	}

	if l != nil {
		c.leaderID = l.id
	}

	return l
}

// hasQuorum: a majority of voting members runs, so a leader can be elected.
func (c *etcdCluster) hasQuorum() bool {
	v := c.voting()
	running := 0

	for _, m := range v {
		if m.running {
			running++
		}
	}

	return len(v) > 0 && running > len(v)/2
}

// add adds a member as Talos joins a control plane (services/etcd.go
// addMember and promoteMember, v1.14.1: MemberAddAsLearner, then
// MemberPromote once the learner caught up, which in the lab is at once),
// with etcd v3.6's checks (etcdserver/server.go):
//   - any proposal needs a leader (Talos's client requires one): no leader;
//   - mayAddMember for a learner: the member asked must have been connected
//     to every voting member for HealthInterval, so a voting member that is
//     down (or started less than healthInterval ago) refuses the add with
//     "unhealthy cluster" until it runs again or is removed;
//   - a second member with the same peer URL (membership ErrPeerURLexists);
//   - mayPromoteMember (RaftCluster.IsReadyToPromoteMember): counting the
//     learner as started, the started voting members must form a quorum of
//     the grown cluster.
func (c *etcdCluster) add(name, addr string) (*etcdMember, error) {
	if !c.hasQuorum() {
		return nil, errEtcdNoLeader
	}

	now := time.Now()

	for _, m := range c.voting() {
		if !m.running || now.Before(m.since.Add(c.healthInterval)) {
			return nil, errEtcdUnhealthy
		}
	}

	// etcd refuses a second member with the same peer URL (membership
	// ErrPeerURLexists): a node that comes back at its address with empty
	// data must have its old member removed first.
	for _, m := range c.members {
		if m.addr == addr {
			return nil, errEtcdPeerURLExist
		}
	}

	started := 1 // the learner being promoted counts as started

	for _, m := range c.voting() {
		if m.started {
			started++
		}
	}

	if n := len(c.voting()) + 1; started < n/2+1 {
		return nil, errEtcdNotEnoughStarted
	}

	m := &etcdMember{id: rand.Uint64(), name: name, addr: addr, started: true, running: true, since: now}
	c.members = append(c.members, m)

	return m, nil
}

// remove removes a member, with etcd's checks (EtcdServer.mayRemoveMember):
// the remaining started voting members must keep a quorum of the smaller
// cluster, and unless the member is down, the members the asked member has
// been connected to for HealthInterval must still form a quorum after the
// removal (so a member that joined or restarted less than healthInterval
// ago does not count yet: "unhealthy cluster").
func (c *etcdCluster) remove(id uint64) error {
	if !c.hasQuorum() {
		return errEtcdNoLeader
	}

	target := c.member(id)
	if target == nil {
		return errEtcdMemberNotFound
	}

	if !target.learner {
		remaining, started := 0, 0

		for _, m := range c.voting() {
			if m.id == id {
				continue
			}

			remaining++

			if m.started {
				started++
			}
		}

		if started < remaining/2+1 {
			return errEtcdNotEnoughStarted
		}

		if target.running {
			// Connected for HealthInterval (numConnectedSince): a member
			// that started less than that ago does not count yet.
			voting, now := c.voting(), time.Now()
			active := 0

			for _, m := range voting {
				if m.running && !now.Before(m.since.Add(c.healthInterval)) {
					active++
				}
			}

			if active-1 < 1+(len(voting)-1)/2 {
				return errEtcdUnhealthy
			}
		}
	}

	c.members = slices.DeleteFunc(c.members, func(m *etcdMember) bool { return m.id == id })

	return nil
}

// validateForUpgrade is Talos's pre-upgrade etcd check for control planes
// (internal/pkg/etcd/etcd.go, Client.ValidateForUpgrade).
func (c *etcdCluster) validateForUpgrade() error {
	if !c.hasQuorum() {
		return errEtcdNoLeader
	}

	if len(c.members) == 2 {
		return fmt.Errorf("etcd member count(%d) is insufficient to maintain quorum if upgrade commences", len(c.members))
	}

	for _, m := range c.members {
		if !m.started {
			return fmt.Errorf("etcd member %016x is not started, all members must be running to perform an upgrade", m.id)
		}

		if !m.running {
			return fmt.Errorf("etcd member %016x is not healthy; all members must be healthy to perform an upgrade: context deadline exceeded", m.id)
		}
	}

	return nil
}
