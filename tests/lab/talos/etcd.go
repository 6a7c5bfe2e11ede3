package talos

import "errors"

// etcd error texts as etcd v3.6 returns them (go.etcd.io/etcd/api/v3/v3rpc/rpctypes);
// the gateway maps etcd's answers to these (etcdgw.go etcdError).
var (
	errEtcdNotEnoughStarted = errors.New("etcdserver: re-configuration failed due to not enough started members")
	errEtcdUnhealthy        = errors.New("etcdserver: unhealthy cluster")
	errEtcdNoLeader         = errors.New("etcdserver: no leader")
	errEtcdMemberNotFound   = errors.New("etcdserver: member not found")
	errEtcdPeerURLExist     = errors.New("etcdserver: Peer URLs already exists")
)

// etcdCluster is the simulator's snapshot of one real etcd cluster (its
// members are etcd processes, etcdreal.go), read under sim.mu by the
// reconciler and checkQuorum. The member list, learner flags and leader
// are etcd's own answers (pollEtcd); a member's running flag is a fact
// about its process. Nothing here decides membership: etcd does.
type etcdCluster struct {
	id      uint64
	cluster string // the Talos cluster.id it was bootstrapped for
	members []*etcdMember
	// hadQuorum: a majority of members ran at some point (quorum.go).
	hadQuorum bool
	leaderID  uint64 // etcd's leader as the poller last saw it
	// real is the client of the members (etcd's gateway); gen counts the
	// membership changes the lab made, so that a poll that raced with one
	// is dropped.
	real *etcdGateway
	gen  uint64
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

// hasQuorum: a majority of voting members' processes run, so etcd can
// elect a leader (a fact, not a timed-out call: an election on a loaded
// machine is not a loss).
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
