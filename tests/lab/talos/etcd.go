package talos

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
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
}

type etcdMember struct {
	id      uint64
	name    string // hostname of the node
	addr    string // node address: peer https://addr:2380, client https://addr:2379
	learner bool
	started bool // has published its name (etcd IsStarted)
	running bool // the node's etcd process is up right now
	wiped   bool // the node's etcd data was wiped (reset): it never runs again
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

// add adds a member. etcd refuses when, counting the new member, fewer
// started members than a quorum would remain (IsReadyToAddVotingMember), and
// any proposal needs a leader.
func (c *etcdCluster) add(name, addr string) (*etcdMember, error) {
	if !c.hasQuorum() {
		return nil, errEtcdNoLeader
	}

	started := 0

	for _, m := range c.voting() {
		if m.started {
			started++
		}
	}

	n := len(c.voting()) + 1
	if !(started == 1 && n == 2) && started < n/2+1 {
		return nil, errEtcdNotEnoughStarted
	}

	// etcd refuses a second member with the same peer URL (membership
	// ErrPeerURLexists): a node that comes back at its address with empty
	// data must have its old member removed first.
	for _, m := range c.members {
		if m.addr == addr {
			return nil, errEtcdPeerURLExist
		}
	}

	m := &etcdMember{id: rand.Uint64(), name: name, addr: addr, started: true, running: true}
	c.members = append(c.members, m)

	return m, nil
}

// remove removes a member, with etcd's checks (EtcdServer.mayRemoveMember):
// the remaining started voting members must keep a quorum of the smaller
// cluster, and unless the member is down, the members the leader is connected
// to must still form a quorum after the removal.
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
			voting := c.voting()
			active := 0

			for _, m := range voting {
				if m.running {
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
