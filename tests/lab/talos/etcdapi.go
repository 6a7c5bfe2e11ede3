package talos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
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
//
// Two implementations: modelEtcd answers from the lab's etcd model
// (etcd.go), with etcd's membership and quorum rules and the numbers of the
// cluster's one real etcd behind the apiserver; realNodeEtcd
// (etcdapi_real.go, Options.RealEtcd) asks the node's real member.
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
func (n *Node) Etcd() NodeEtcd {
	if n.sim.realEtcd() {
		return realNodeEtcd{n: n}
	}

	return modelEtcd{n: n}
}

// modelEtcd answers from the lab's etcd model.
type modelEtcd struct{ n *Node }

func (e modelEtcd) Members(ctx context.Context, local bool) ([]EtcdMemberInfo, error) {
	n, s := e.n, e.n.sim

	s.mu.Lock()

	var (
		ec  *etcdCluster
		err error
	)

	switch {
	case !local:
		ec, err = s.etcdClient(n)
	case n.etcd == nil || !n.etcd.running:
		err = errEtcdDial
	case !n.etcdCluster.hasQuorum():
		err = errEtcdNoLeader
	default:
		ec = n.etcdCluster
	}

	if err != nil {
		s.mu.Unlock()

		return nil, s.etcdFailure(ctx, err)
	}

	defer s.mu.Unlock()

	out := make([]EtcdMemberInfo, 0, len(ec.members))

	for _, m := range ec.members {
		name := m.name
		if !m.started {
			name = ""
		}

		out = append(out, EtcdMemberInfo{
			ID: m.id, Name: name, IsLearner: m.learner,
			PeerURLs:   []string{"https://" + joinPort(m.addr, 2380)},
			ClientURLs: []string{"https://" + joinPort(m.addr, 2379)},
		})
	}

	return out, nil
}

// local is this node's running member and its cluster (sim.mu held).
func (e modelEtcd) local() (*etcdMember, *etcdCluster, error) {
	n := e.n

	switch {
	case n.etcd == nil || !n.etcd.running:
		return nil, nil, errEtcdDial
	case !n.etcdCluster.hasQuorum():
		return nil, nil, errEtcdNoLeader
	default:
		return n.etcd, n.etcdCluster, nil
	}
}

func (e modelEtcd) Status(ctx context.Context) (EtcdMemberStatus, error) {
	s := e.n.sim

	s.mu.Lock()
	m, ec, err := e.local()

	if err != nil {
		s.mu.Unlock()

		return EtcdMemberStatus{}, s.etcdFailure(ctx, err)
	}

	var leader uint64
	if l := ec.leader(); l != nil {
		leader = l.id
	}

	st := EtcdMemberStatus{
		MemberID: m.id, Version: etcdVersion(), StorageVersion: storageVersion(etcdVersion()),
		Leader: leader, IsLearner: m.learner, Errors: alarmErrors(ec.alarms),
	}
	backing := e.n.realEtcd()
	s.mu.Unlock()

	// Sizes and raft positions are the real etcd's (the model has none).
	if backing != nil {
		if r, err := backing.realEtcdStatus(ctx); err == nil {
			st.Version, st.StorageVersion = r.Version, r.StorageVersion
			st.DBSize, st.DBSizeInUse = int64(parseUint(r.DBSize)), int64(parseUint(r.DBSizeInUse))
			st.RaftIndex, st.RaftTerm, st.RaftAppliedIndex = parseUint(r.RaftIndex), parseUint(r.RaftTerm), parseUint(r.RaftAppliedIndex)
		}
	}

	return st, nil
}

// localBacking checks that this node runs an etcd member and returns the
// real etcd behind it (nil when the cluster runs none).
func (e modelEtcd) localBacking(ctx context.Context) (*kubeControlPlane, error) {
	s := e.n.sim

	s.mu.Lock()
	_, _, err := e.local()
	backing := e.n.realEtcd()
	s.mu.Unlock()

	if err != nil {
		return nil, s.etcdFailure(ctx, err)
	}

	return backing, nil
}

// realEtcd is the cluster's real etcd behind this node's member (sim.mu
// held); nil when the cluster runs none.
func (n *Node) realEtcd() *kubeControlPlane {
	if n.active == nil {
		return nil
	}

	if c := n.sim.clusters[n.active.Cluster().ID()]; c != nil {
		return c.kube
	}

	return nil
}

func (e modelEtcd) Alarms(ctx context.Context) ([]EtcdAlarm, error) {
	s := e.n.sim

	s.mu.Lock()
	_, ec, err := e.local()

	if err != nil {
		s.mu.Unlock()

		return nil, s.etcdFailure(ctx, err)
	}
	defer s.mu.Unlock()

	return slices.Clone(ec.alarms), nil
}

func (e modelEtcd) DisarmAlarms(ctx context.Context) ([]EtcdAlarm, error) {
	s := e.n.sim

	s.mu.Lock()
	_, ec, err := e.local()

	if err != nil {
		s.mu.Unlock()

		return nil, s.etcdFailure(ctx, err)
	}
	defer s.mu.Unlock()

	out := ec.alarms
	ec.alarms = nil

	return out, nil
}

func (e modelEtcd) Defragment(ctx context.Context) error {
	backing, err := e.localBacking(ctx)
	if err != nil {
		return err
	}

	if backing == nil {
		return nil
	}

	// The real keyspace is defragmented; a real etcd that is down (the
	// model and the process only disagree while it restarts) is not an
	// error of this member.
	if err := backing.realEtcdDefragment(ctx); err != nil && !errors.Is(err, errNoRealEtcd) {
		return err
	}

	return nil
}

func (e modelEtcd) ForfeitLeadership(ctx context.Context) (string, error) {
	s := e.n.sim

	s.mu.Lock()
	m, ec, err := e.local()

	if err != nil {
		s.mu.Unlock()

		return "", s.etcdFailure(ctx, err)
	}
	defer s.mu.Unlock()

	if ec.leader() != m {
		return "", nil
	}

	for _, o := range ec.voting() {
		if o != m && o.running {
			ec.leaderID = o.id

			return o.name, nil
		}
	}

	return "", nil
}

// Snapshot is the real etcd's: the keyspace the cluster's apiserver
// writes (the model's members hold no data).
func (e modelEtcd) Snapshot(ctx context.Context, w io.Writer) error {
	backing, err := e.localBacking(ctx)
	if err != nil {
		return err
	}

	if backing == nil {
		return errNoRealEtcd
	}

	return backing.realEtcdSnapshot(ctx, w)
}

func (e modelEtcd) RemoveMember(ctx context.Context, id uint64) error {
	return e.n.sim.etcdRemove(ctx, e.n, id)
}

func (e modelEtcd) Leave(ctx context.Context) error {
	return e.n.leaveEtcd(ctx)
}

// SetEtcdAlarm raises an alarm on the etcd cluster of the node at addr (as
// a full disk raises NOSPACE): tests of alarm handling.
func (s *Sim) SetEtcdAlarm(n *Node, alarm string) error {
	s.mu.Lock()

	if n.etcd == nil || n.etcdCluster == nil {
		s.mu.Unlock()

		return fmt.Errorf("node %s runs no etcd member", n.addr)
	}

	if ec := n.etcdCluster; ec.real != nil {
		// A real member's alarm is raised as etcd raises one
		// (Maintenance.Alarm ACTIVATE, the request etcd's own space
		// check proposes): a NOSPACE alarm really stops writes.
		u, id := etcdClientURL(n.addr), n.etcd.id
		s.mu.Unlock()

		_, err := ec.real.alarm(context.Background(), u, "ACTIVATE", EtcdAlarm{MemberID: id, Alarm: alarm})

		return err
	}
	defer s.mu.Unlock()

	n.etcdCluster.alarms = append(n.etcdCluster.alarms, EtcdAlarm{MemberID: n.etcd.id, Alarm: alarm})

	return nil
}

func alarmErrors(alarms []EtcdAlarm) []string {
	var out []string
	for _, a := range alarms {
		out = append(out, fmt.Sprintf("memberID:%d alarm:%s", a.MemberID, a.Alarm))
	}

	return out
}

// etcdVersion is the version of the etcd the lab runs ("3.6.6").
func etcdVersion() string {
	if t, err := FindKubeTools(); err == nil {
		return trimV(t.EtcdVersion)
	}

	return ""
}

// storageVersion is the storage version etcd reports: its major.minor.0.
func storageVersion(v string) string {
	major, rest, ok := cutDot(v)
	if !ok {
		return ""
	}

	minor, _, _ := cutDot(rest)

	return major + "." + minor + ".0"
}

func trimV(v string) string { return strings.TrimPrefix(v, "v") }

func cutDot(s string) (string, string, bool) { return strings.Cut(s, ".") }
