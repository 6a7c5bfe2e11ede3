package talos

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// NodeEtcd is what a control plane's machined reaches etcd with: its etcd
// client, built from the control plane endpoints, or its own member on
// localhost:2379. machined's etcd API (EtcdMemberList, EtcdStatus,
// EtcdAlarmList/Disarm, EtcdSnapshot, EtcdDefragment, EtcdForfeitLeadership,
// EtcdRemoveMemberByID, EtcdLeaveCluster: talosctl etcd …) answers through
// it. Errors are etcd's (errEtcdNoLeader, errEtcdDial, errEtcdNotEnoughStarted,
// errEtcdUnhealthy, errEtcdMemberNotFound, …) for the caller to wrap as
// Talos does. Every method takes sim.mu itself: call it without holding it.
// The implementation (realNodeEtcd, etcdapi_real.go) asks the node's real
// member, or the members reached through the endpoints.
type NodeEtcd interface {
	// Members is MemberList through the endpoints (local: on this node's
	// own member, the QueryLocal form).
	Members(ctx context.Context, local bool) ([]EtcdMemberInfo, error)
	// Status is this node's member's Maintenance.Status.
	Status(ctx context.Context) (EtcdMemberStatus, error)
	// Alarms lists the cluster's alarms; DisarmAlarms clears them and
	// returns the ones it cleared.
	Alarms(ctx context.Context) ([]EtcdAlarm, error)
	DisarmAlarms(ctx context.Context) ([]EtcdAlarm, error)
	// Defragment defragments this node's member.
	Defragment(ctx context.Context) error
	// ForfeitLeadership moves leadership away from this node's member when
	// it leads; it returns the new leader's name ("" when it did not lead).
	ForfeitLeadership(ctx context.Context) (string, error)
	// Snapshot writes a snapshot of the keyspace (etcd's snapshot format).
	Snapshot(ctx context.Context, w io.Writer) error
	// RemoveMember removes a member by ID through the endpoints.
	RemoveMember(ctx context.Context, id uint64) error
	// Leave removes this node's member (graceful, retried while etcd says
	// the cluster is unhealthy), stops etcd and deletes its data.
	Leave(ctx context.Context) error
}

// EtcdMemberInfo is a member as MemberList shows it.
type EtcdMemberInfo struct {
	ID         uint64
	Name       string // "" until the member started (published its name)
	PeerURLs   []string
	ClientURLs []string
	IsLearner  bool
}

// EtcdMemberStatus is a member's Maintenance.Status answer.
type EtcdMemberStatus struct {
	MemberID         uint64
	Version          string // etcd server version, "3.6.6"
	StorageVersion   string
	DBSize           int64
	DBSizeInUse      int64
	Leader           uint64
	RaftIndex        uint64
	RaftTerm         uint64
	RaftAppliedIndex uint64
	Errors           []string
	IsLearner        bool
}

// EtcdAlarm is an active alarm ("NOSPACE", "CORRUPT") on a member.
type EtcdAlarm struct {
	MemberID uint64
	Alarm    string
}

// Etcd returns the node's etcd client.
func (n *Node) Etcd() NodeEtcd { return realNodeEtcd{n: n} }

// SetEtcdAlarm raises an alarm on the etcd cluster of the node at addr (as
// a full disk raises NOSPACE): tests of alarm handling.
func (s *Sim) SetEtcdAlarm(n *Node, alarm string) error {
	s.mu.Lock()

	if n.etcd == nil || n.etcdCluster == nil {
		s.mu.Unlock()

		return fmt.Errorf("node %s runs no etcd member", n.addr)
	}

	// The alarm is raised as etcd raises one (Maintenance.Alarm ACTIVATE,
	// the request etcd's own space check proposes): a NOSPACE alarm really
	// stops writes.
	ec, u, id := n.etcdCluster, etcdClientURL(n.addr), n.etcd.id
	s.mu.Unlock()

	_, err := ec.real.alarm(context.Background(), u, "ACTIVATE", EtcdAlarm{MemberID: id, Alarm: alarm})

	return err
}

// etcdVersion is the version of the etcd the lab runs ("3.6.6").
func etcdVersion() string {
	if t, err := FindKubeTools(); err == nil {
		return trimV(t.EtcdVersion)
	}

	return ""
}

func trimV(v string) string { return strings.TrimPrefix(v, "v") }
