package talos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/config"
)

// Real etcd members: each control plane that Talos says is an etcd member
// runs its own etcd process (etcdmember.go), and the membership calls go
// to that real cluster through etcd's API (etcdgw.go). The simulator's
// etcdCluster is only a published snapshot of the real cluster, for the
// reconciler and checkQuorum, which read it under sim.mu: nothing here
// calls etcd while holding sim.mu. The snapshot's
// member list, learner flags and leader come from the poller (pollEtcd);
// a member's running flag is a fact about its process (started, killed,
// paused, exited), never a timed-out call, so a loaded machine's leader
// election is not recorded as a quorum loss.

// memberURLs are the client URLs of the running members of ec's nodes
// (sim.mu held), the ones reached through n's endpoints first, learners
// last (a learner serves only status and serializable reads: etcd answers
// anything else "rpc not supported for learner", and the client moves on).
func (s *Sim) memberURLs(n *Node, ec *etcdCluster) []string {
	out := s.memberURLsOf(n, ec, false)

	return append(out, s.memberURLsOf(n, ec, true)...)
}

func (s *Sim) memberURLsOf(n *Node, ec *etcdCluster, learners bool) []string {
	var out []string

	up := func(cp *Node) bool {
		return cp.etcdCluster == ec && cp.etcdProc != nil && cp.etcd != nil && cp.etcd.running && cp.etcd.learner == learners
	}

	if n != nil {
		if nodes, ok := s.endpointNodes(n); ok {
			for _, cp := range nodes {
				if up(cp) {
					out = append(out, etcdClientURL(cp.addr))
				}
			}
		}
	}

	for node := range s.nodes {
		if up(node) {
			if u := etcdClientURL(node.addr); !slices.Contains(out, u) {
				out = append(out, u)
			}
		}
	}

	return out
}

// bootstrapReal is Bootstrap with a real member: a new cluster of one
// (etcd --initial-cluster-state=new), answered once it has elected itself.
//
// Everything the node records happens in one locked section after the
// generation check: a node that powered off or rebooted while etcd started
// must not count as a running member, nor record an empty data directory.
// It reports whether the cluster already had an etcd cluster (split brain)
// and the member's data directory.
func (n *Node) bootstrapReal(ctx context.Context, cfg config.Provider, clusterID string) (bool, *etcdCluster, *etcdMember, string, error) {
	s := n.sim

	s.mu.Lock()
	name, addr, gen := n.hostname, n.addr, n.gen
	s.mu.Unlock()

	gw, err := newEtcdGateway(cfg)
	if err != nil {
		return false, nil, nil, "", err
	}

	dir := s.newEtcdDataDir()

	ep, err := s.startEtcdMember(cfg, dir, name, addr, "new", name+"="+etcdPeerURL(addr))
	if err != nil {
		return false, nil, nil, "", err
	}

	st, err := waitEtcdLeader(ctx, gw, ep)
	if err != nil {
		ep.kill()
		removeEtcdData(dir)

		return false, nil, nil, "", err
	}

	ec := &etcdCluster{id: uint64(st.Header.ClusterID), cluster: clusterID, real: gw}
	member := &etcdMember{id: uint64(st.Header.MemberID), name: name, addr: addr.String(), started: true, running: true}
	ec.members = []*etcdMember{member}

	s.mu.Lock()
	if n.gen != gen || !n.addr.IsValid() {
		s.mu.Unlock()
		ep.kill()
		removeEtcdData(dir)

		return false, nil, nil, "", errRebootedDuringBootstrap
	}

	c := s.clusterFor(clusterID)
	if !s.goLocked(func() { s.pollEtcd(ec) }) {
		s.mu.Unlock()
		ep.kill()

		return false, nil, nil, "", errors.New("the lab is closing")
	}

	n.etcdProc = ep
	split := s.recordBootstrap(n, c, ec, member)
	s.mu.Unlock()

	return split, ec, member, dir, nil
}

var errRebootedDuringBootstrap = errors.New("the node rebooted during the bootstrap")

// waitEtcdLeader waits until a starting member answers with a leader
// (bounded: a member that neither serves nor exits is a failure).
func waitEtcdLeader(ctx context.Context, gw *etcdGateway, ep *etcdProcess) (gwStatus, error) {
	deadline := time.Now().Add(2 * time.Minute)

	for time.Now().Before(deadline) {
		if ep.p.exited() {
			return gwStatus{}, fmt.Errorf("etcd exited: %s", ep.p.lastLines(5))
		}

		st, err := gw.status(ctx, etcdClientURL(ep.addr))
		if err == nil && st.Leader != 0 {
			return st, nil
		}

		select {
		case <-ctx.Done():
			return gwStatus{}, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}

	return gwStatus{}, errors.New("etcd did not elect a leader within two minutes")
}

// startMemberAgain starts the node's member from its data directory after
// a reboot or power cycle (run by the reconciler, outside sim.mu).
func (n *Node) startMemberAgain(gen int, ec *etcdCluster, m *etcdMember, cfg config.Provider, dir string) {
	s := n.sim

	s.mu.Lock()
	name, addr := n.hostname, n.addr
	initial := make([]string, 0, len(ec.members))

	for _, o := range ec.members {
		nm := o.name
		if o == m {
			nm = name
		}

		if a, err := netip.ParseAddr(o.addr); err == nil && nm != "" {
			initial = append(initial, nm+"="+etcdPeerURL(a))
		}
	}
	s.mu.Unlock()

	ep, err := s.startEtcdMember(cfg, dir, name, addr, "existing", strings.Join(initial, ","))

	s.mu.Lock()
	n.etcdJoining = false

	switch {
	case err != nil:
		n.etcdRetryAt = time.Now().Add(time.Second)
	case n.gen != gen || !n.addr.IsValid() || n.thaw != nil:
		err = errors.New("the node rebooted or paused meanwhile")
	default:
		m.running, m.addr, m.name = true, addr.String(), name
		n.etcd, n.etcdCluster, n.etcdSince, n.etcdProc = m, ec, time.Now(), ep
		ep = nil
	}
	s.mu.Unlock()

	ep.kill()

	if err != nil {
		n.logf("etcd failed to start", "error", err)
	}

	s.nudge()
}

// joinReal is Talos's join of a control plane without etcd data
// (services/etcd.go, v1.14: addMember removes a member with this
// hostname, then MemberAddAsLearner through the control plane endpoints;
// etcd starts with --initial-cluster-state=existing and the add's member
// list; promoteMember retries MemberPromote until etcd accepts it). Every
// refusal is etcd's own (no leader, unhealthy cluster, too many learners,
// not in sync); the reconciler tries again at Talos's pace (etcdpace.go).
func (n *Node) joinReal(gen int, ec *etcdCluster, cfg config.Provider) {
	s := n.sim

	id, err := n.addLearner(gen, ec, cfg)

	s.mu.Lock()
	n.etcdJoining = false

	if err != nil {
		n.etcdRetryAt = s.nextJoinRetry()
	}

	same := n.etcdJoinErr == errString(err)
	n.etcdJoinErr = errString(err)
	s.mu.Unlock()

	if err != nil {
		if !same {
			n.logf("joining etcd failed, retrying", "error", err)
		}

		return
	}

	n.logf("etcd joined the cluster as a learner", "member", strconv.FormatUint(id, 16))
	s.nudge()
	n.promote(gen, ec, id)
}

func errString(err error) string {
	if err == nil {
		return ""
	}

	return err.Error()
}

// etcdJoinAttemptTimeout bounds one join attempt (the list, the removal of
// a former self and the add), as Talos does (services/etcd.go
// buildInitialCluster: context.WithTimeout(ctx, 30*time.Second) around
// addMember); the reconciler then tries again.
const etcdJoinAttemptTimeout = 30 * time.Second

func (n *Node) addLearner(gen int, ec *etcdCluster, cfg config.Provider) (uint64, error) {
	s := n.sim

	ctx, cancel := context.WithTimeout(n.ctx, etcdJoinAttemptTimeout)
	defer cancel()

	s.mu.Lock()
	name, addr, urls := n.hostname, n.addr, s.memberURLs(n, ec)
	s.mu.Unlock()

	remove := func(ctx context.Context, id uint64) error {
		if err := s.removeRealMember(ctx, n, ec, id); err != nil {
			return err
		}

		n.logf("removed the etcd member of this node's previous install", "member", strconv.FormatUint(id, 16))

		return nil
	}

	members, id, err := ec.real.addMember(ctx, urls, name, etcdPeerURL(addr), reusesUnnamedLearner(n.runningVersion()), remove)
	if err != nil {
		return 0, err
	}

	initial := make([]string, 0, len(members))

	for _, m := range members {
		nm := m.Name
		if uint64(m.ID) == id {
			nm = name
		}

		for _, u := range m.PeerURLs {
			initial = append(initial, nm+"="+u)
		}
	}

	dir := s.newEtcdDataDir()

	if err := n.updateState(func(ps *persistState) {
		ps.etcdCluster, ps.etcdMember, ps.etcdData = ec.id, id, dir
	}); err != nil {
		return 0, fmt.Errorf("recording etcd data on disk: %w", err)
	}

	ep, err := s.startEtcdMember(cfg, dir, name, addr, "existing", strings.Join(initial, ","))
	if err != nil {
		return 0, err
	}

	s.mu.Lock()

	if n.gen != gen || !n.addr.IsValid() {
		s.mu.Unlock()
		ep.kill()

		return 0, errors.New("the node rebooted during the join")
	}

	ec.gen++
	m := ec.upsert(id)
	m.name, m.addr, m.learner, m.running = name, addr.String(), true, true
	n.etcd, n.etcdCluster, n.etcdSince, n.etcdProc, n.etcdJoinErr = m, ec, time.Now(), ep, ""
	s.mu.Unlock()

	return id, nil
}

// promote retries MemberPromote while etcd refuses it (the learner has not
// caught up, or the cluster has no leader for now), for ten minutes as
// Talos's promoteMember does, until the member is gone or the node
// reboots.
func (n *Node) promote(gen int, ec *etcdCluster, id uint64) {
	s := n.sim
	deadline := time.Now().Add(10 * time.Minute)
	pace := promotePaceOf(n.runningVersion())

	for time.Now().Before(deadline) {
		s.mu.Lock()
		gone := n.gen != gen || n.etcd == nil || n.etcd.id != id
		urls := s.memberURLs(n, ec)
		s.mu.Unlock()

		if gone {
			return
		}

		ctx, cancel := context.WithTimeout(n.ctx, pace.attemptTimeout)
		err := ec.real.callAny(ctx, urls, "/v3/cluster/member/promote", map[string]any{"ID": strconv.FormatUint(id, 10)}, &struct{}{})
		cancel()
		if err == nil {
			s.mu.Lock()
			ec.gen++

			if m := ec.member(id); m != nil {
				m.learner = false
			}
			s.mu.Unlock()

			n.logf("etcd member promoted to a voting member", "member", strconv.FormatUint(id, 16))
			s.nudge()

			return
		}

		if errors.Is(err, errEtcdMemberNotFound) {
			return
		}

		select {
		case <-n.ctx.Done():
			return
		case <-time.After(pace.retryDelay(s.opts.TimeScale, rand.N(pace.jitter))):
		}
	}

	n.logf("etcd member was not promoted within ten minutes", "member", strconv.FormatUint(id, 16))
}

// upsert returns the member with id, adding it (not running) if new.
func (ec *etcdCluster) upsert(id uint64) *etcdMember {
	if m := ec.member(id); m != nil {
		return m
	}

	m := &etcdMember{id: id}
	ec.members = append(ec.members, m)

	return m
}

// removeRealMember is MemberRemove through the endpoints; the snapshot
// drops the member at once (a removed member's etcd exits by itself:
// etcdserver "the member has been permanently removed from the cluster").
func (s *Sim) removeRealMember(ctx context.Context, n *Node, ec *etcdCluster, id uint64) error {
	s.mu.Lock()
	urls := s.memberURLs(n, ec)
	s.mu.Unlock()

	if err := ec.real.callAny(ctx, urls, "/v3/cluster/member/remove", map[string]any{"ID": strconv.FormatUint(id, 10)}, &struct{}{}); err != nil {
		return err
	}

	s.mu.Lock()
	ec.gen++
	kill := s.dropMember(ec, id)
	s.mu.Unlock()

	for _, ep := range kill {
		ep.kill()
	}

	s.nudge()

	return nil
}

// dropMember removes a member from the snapshot and detaches the nodes
// running it (sim.mu held); the caller kills the returned processes
// outside the lock.
func (s *Sim) dropMember(ec *etcdCluster, id uint64) []*etcdProcess {
	ec.members = slices.DeleteFunc(ec.members, func(m *etcdMember) bool { return m.id == id })

	var kill []*etcdProcess

	for node := range s.nodes {
		if node.etcd != nil && node.etcd.id == id && node.etcdCluster == ec {
			node.etcd.running = false
			node.etcd, node.etcdCluster = nil, nil

			if node.etcdProc != nil {
				kill = append(kill, node.etcdProc)
				node.etcdProc = nil
			}
		}
	}

	return kill
}

// pollEtcd publishes the real cluster's member list, learner flags and
// leader into the snapshot, and notices members whose process exited, once
// a second until the lab closes. An answer that raced with a membership
// change the lab made (ec.gen moved) is dropped: the next round counts.
func (s *Sim) pollEtcd(ec *etcdCluster) {
	defer ec.real.close()

	tick := time.NewTicker(time.Second)
	defer tick.Stop()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	go func() {
		<-s.done
		cancel()
	}()

	for {
		select {
		case <-s.done:
			return
		case <-tick.C:
		}

		if s.pollEtcdOnce(ctx, ec) {
			s.nudge()
		}
	}
}

func (s *Sim) pollEtcdOnce(ctx context.Context, ec *etcdCluster) bool {
	s.mu.Lock()
	gen, urls := ec.gen, s.memberURLs(nil, ec)
	exited := s.reapEtcd(ec)
	s.mu.Unlock()

	for _, e := range exited {
		s.log.Warn("etcd exited", "member", e.name, "output", e.p.lastLines(5))
	}

	if len(urls) == 0 {
		return len(exited) > 0
	}

	// The leader's view is current; without a leader any member's is what
	// etcd would answer a serializable read with.
	var (
		leader, term uint64
		from         = urls[0]
	)

	for _, u := range urls {
		ctx2, cancel := context.WithTimeout(ctx, 3*time.Second)
		st, err := ec.real.status(ctx2, u)
		cancel()

		if err == nil && st.Leader != 0 {
			leader, term = uint64(st.Leader), uint64(st.RaftTerm)

			if leader == uint64(st.Header.MemberID) {
				from = u

				break
			}
		}
	}

	var out struct {
		Members []gwMember `json:"members"`
	}

	ctx2, cancel := context.WithTimeout(ctx, 3*time.Second)
	err := ec.real.call(ctx2, from, "/v3/cluster/member/list", map[string]any{"linearizable": false}, &out, false)
	cancel()

	if err != nil {
		return len(exited) > 0
	}

	s.mu.Lock()
	defer s.mu.Unlock()

	if ec.gen != gen {
		return len(exited) > 0
	}

	changed := ec.leaderID != leader || len(exited) > 0

	if ec.leaderID != leader {
		// Every leader change is logged with etcd's raft term: the way
		// to count elections (flaps) a loaded machine causes.
		s.log.Info("etcd leader changed", "cluster", ec.cluster,
			"from", strconv.FormatUint(ec.leaderID, 16), "to", strconv.FormatUint(leader, 16), "term", term)
	}

	ec.leaderID = leader

	seen := map[uint64]bool{}

	for _, gm := range out.Members {
		id := uint64(gm.ID)
		seen[id] = true

		m := ec.member(id)
		if m == nil {
			m, changed = ec.upsert(id), true
		}

		if m.learner != gm.IsLearner || m.started != (gm.Name != "") {
			m.learner, m.started, changed = gm.IsLearner, gm.Name != "", true
		}

		if gm.Name != "" {
			m.name = gm.Name
		}

		if len(gm.PeerURLs) > 0 {
			if u, err := url.Parse(gm.PeerURLs[0]); err == nil {
				m.addr = u.Hostname()
			}
		}
	}

	var kill []*etcdProcess

	for _, m := range slices.Clone(ec.members) {
		if !seen[m.id] {
			kill = append(kill, s.dropMember(ec, m.id)...)
			changed = true
		}
	}

	killAll := func() {
		for _, ep := range kill {
			ep.kill()
		}
	}

	if len(kill) > 0 && !s.goLocked(killAll) {
		killAll() // Close has begun: kill them before it waits
	}

	return changed
}

// reapEtcd notices members whose process ended by itself (sim.mu held):
// the member is down; the reconciler starts it again from its data while
// it is still a member, as Talos restarts its etcd service.
func (s *Sim) reapEtcd(ec *etcdCluster) []*etcdProcess {
	var out []*etcdProcess

	for node := range s.nodes {
		if node.etcdCluster != ec || node.etcdProc == nil || !node.etcdProc.p.exited() {
			continue
		}

		out = append(out, node.etcdProc)
		node.etcdProc = nil

		if node.etcd != nil {
			node.etcd.running = false
		}

		node.etcd, node.etcdCluster = nil, nil
	}

	return out
}
