package talos

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// QuorumLoss is a moment when an etcd cluster lost its quorum: fewer than a
// majority of its voting members ran, so it had no leader and accepted no
// write (etcd raft; Talos's own etcd health check and kube-apiserver's
// /readyz fail then). A tool that manages a cluster must never cause one
// outside a deliberate outage: tests and the soak assert none.
//
// The end of a cluster is not a loss: when every member that is down had its
// data wiped (reset), nothing could bring the quorum back, as at the end of
// a whole-cluster destroy, whose last control plane is reset without leaving
// etcd.
type QuorumLoss struct {
	Cluster string
	// Members are the voting members' hostnames; Down those not running.
	Members []string
	Down    []string
	At      time.Time
	// Until is when the quorum came back (zero while it is still lost).
	Until time.Time
}

func (q QuorumLoss) String() string {
	s := fmt.Sprintf("etcd lost quorum: %d of %d members down (%s)", len(q.Down), len(q.Members), strings.Join(q.Down, ", "))
	if !q.Until.IsZero() {
		s += fmt.Sprintf(", back after %s", q.Until.Sub(q.At).Round(time.Millisecond))
	}

	return s
}

// QuorumLosses returns every quorum loss seen so far, in order, each
// episode once (an ongoing one has a zero Until).
func (s *Sim) QuorumLosses() []QuorumLoss {
	s.mu.Lock()
	defer s.mu.Unlock()

	return slices.Clone(s.quorum)
}

// checkQuorum records the etcd clusters that lost their quorum since the
// last check and ends the episodes of those that have it again (sim.mu
// held). It runs on every reconcile step, which every change of a member's
// running state nudges, so a loss is seen as it happens.
func (s *Sim) checkQuorum(clusterID string, ec *etcdCluster) {
	if s.quorumOpen == nil {
		s.quorumOpen = map[*etcdCluster]int{}
	}

	i, open := s.quorumOpen[ec]

	if ec.hasQuorum() {
		ec.hadQuorum = true

		if open {
			s.quorum[i].Until = time.Now()
			delete(s.quorumOpen, ec)
			s.log.Info("etcd quorum is back", "cluster", clusterID)
		}

		return
	}

	if open || !ec.hadQuorum {
		return
	}

	q := QuorumLoss{Cluster: clusterID, At: time.Now()}
	lost := false

	for _, m := range ec.voting() {
		q.Members = append(q.Members, m.name)

		if !m.running {
			q.Down = append(q.Down, m.name)
			lost = lost || !m.wiped
		}
	}

	if !lost {
		return // every member that is down was wiped: the cluster ended
	}

	s.quorumOpen[ec] = len(s.quorum)
	s.quorum = append(s.quorum, q)
	s.log.Warn(q.String(), "cluster", clusterID)
}
