package talos

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/config"
)

// Bootstrap creates the etcd cluster on this control plane
// (v1alpha1_server.go Bootstrap): refused before CRI is up and on workers;
// AlreadyExists once this node has etcd data.
func (m *machined) Bootstrap(context.Context, *machine.BootstrapRequest) (*machine.BootstrapResponse, error) {
	n := m.node
	s := n.sim

	n.logf("bootstrap request received")

	cfg, err := m.current()
	if err != nil {
		return nil, err
	}

	s.mu.Lock()

	if time.Now().Before(n.bootedAt.Add(s.scaled(criDuration))) {
		s.mu.Unlock()

		return nil, status.Error(codes.FailedPrecondition, "bootstrap is not available yet")
	}

	if !isControlPlane(cfg) {
		s.mu.Unlock()

		return nil, status.Error(codes.FailedPrecondition, "bootstrap can only be performed on a control plane node")
	}

	if n.etcd != nil || n.etcdJoining || (n.ps != nil && n.ps.etcdMember != 0) {
		s.mu.Unlock()

		return nil, status.Error(codes.AlreadyExists, "etcd data directory is not empty")
	}

	// Talos answers once its checks pass and runs the bootstrap sequence
	// in a goroutine (machined v1alpha1_server.go Bootstrap: `go func() {
	// ... s.Controller.Run(..., runtime.SequenceBootstrap, in) ... }()`); a
	// failure is only logged ("bootstrap failed").
	n.etcdJoining = true
	clusterID := cfg.Cluster().ID()

	if !s.goLocked(func() { n.bootstrapAsync(cfg, clusterID) }) {
		n.etcdJoining = false
		s.mu.Unlock()

		return nil, status.Error(codes.Unavailable, "the node is shutting down")
	}

	s.mu.Unlock()

	return &machine.BootstrapResponse{Messages: []*machine.Bootstrap{{}}}, nil
}

// recordBootstrap makes a bootstrapped cluster this node's (sim.mu held);
// it reports whether the cluster already had one (split brain).
func (s *Sim) recordBootstrap(n *Node, c *cluster, ec *etcdCluster, member *etcdMember) bool {
	s.etcds[ec.id] = ec

	split := c.etcd != nil
	if !split {
		c.etcd = ec
	}

	n.etcd, n.etcdCluster, n.etcdSince, n.etcdJoining = member, ec, time.Now(), true

	return split
}

// finishBootstrap persists the new member (outside sim.mu; etcdJoining is
// still set, so a second Bootstrap is refused meanwhile).
func (n *Node) finishBootstrap(split bool, ec *etcdCluster, member *etcdMember, dir string) error {
	s := n.sim

	if split {
		n.logf("bootstrapping a second etcd cluster: this cluster was already bootstrapped on another node (split brain)")
	}

	err := n.updateState(func(ps *persistState) { ps.etcdCluster, ps.etcdMember, ps.etcdData = ec.id, member.id, dir })

	s.mu.Lock()
	n.etcdJoining = false
	s.mu.Unlock()

	if err != nil {
		return err
	}

	n.publish()
	s.nudge()

	return nil
}

// bootstrapAsync is the bootstrap sequence after Bootstrap has
// answered (run through goLocked, so Close waits for it). A failure is
// logged as Talos logs it; Talos then stops its API server and the node
// goes down, which the lab approximates with a reboot sequence: it asks
// machined's lock as one (request), so that it is not started while
// another sequence runs, nor another one during it.
func (n *Node) bootstrapAsync(cfg config.Provider, clusterID string) {
	s := n.sim

	split, ec, member, dir, err := n.bootstrapReal(n.ctx, cfg, clusterID)
	if err == nil {
		err = n.finishBootstrap(split, ec, member, dir)
	} else {
		s.mu.Lock()
		n.etcdJoining = false
		s.mu.Unlock()
	}

	if err != nil {
		n.logf("bootstrap failed: " + err.Error())

		if n.ctx.Err() == nil && !errors.Is(err, errRebootedDuringBootstrap) {
			n.request("reboot", nodeEvent{kind: evReboot})
		}
	}
}

func (m *machined) EtcdMemberList(ctx context.Context, in *machine.EtcdMemberListRequest) (*machine.EtcdMemberListResponse, error) {
	n := m.node

	cfg, err := m.current()
	if err != nil {
		return nil, err
	}

	if err := checkControlplane(cfg, "member list"); err != nil {
		return nil, err
	}

	members, err := n.Etcd().Members(ctx, in.QueryLocal)
	if err != nil {
		return nil, err
	}

	list := &machine.EtcdMembers{}

	for _, mem := range members {
		list.LegacyMembers = append(list.LegacyMembers, mem.Name)
		list.Members = append(list.Members, &machine.EtcdMember{
			Id:         mem.ID,
			Hostname:   mem.Name,
			PeerUrls:   mem.PeerURLs,
			ClientUrls: mem.ClientURLs,
			IsLearner:  mem.IsLearner,
		})
	}

	return &machine.EtcdMemberListResponse{Messages: []*machine.EtcdMembers{list}}, nil
}

func (m *machined) EtcdRemoveMemberByID(ctx context.Context, in *machine.EtcdRemoveMemberByIDRequest) (*machine.EtcdRemoveMemberByIDResponse, error) {
	n := m.node
	s := n.sim

	cfg, err := m.current()
	if err != nil {
		return nil, err
	}

	if err := checkControlplane(cfg, "etcd remove member"); err != nil {
		return nil, err
	}

	if err := s.etcdRemove(ctx, n, in.MemberId); errors.Is(err, errEtcdDial) || errors.Is(err, errNoEndpoints) {
		return nil, fmt.Errorf("failed to create etcd client: %w", err)
	} else if err != nil {
		return nil, etcdRemoveErr(in.MemberId, err)
	}

	// For tests that check the order of a teardown (apid logs every call).
	n.logf(fmt.Sprintf("etcd member %x removed", in.MemberId), "through", "EtcdRemoveMemberByID")
	s.nudge()

	return &machine.EtcdRemoveMemberByIDResponse{Messages: []*machine.EtcdRemoveMemberByID{{}}}, nil
}

func etcdRemoveErr(id uint64, err error) error {
	if errors.Is(err, errEtcdMemberNotFound) {
		return status.Error(codes.NotFound, err.Error())
	}

	return fmt.Errorf("failed to remove member: failed to remove member %d: %w", id, err)
}

// etcdRemove is MemberRemove through the client Talos builds from the
// control plane endpoints.
func (s *Sim) etcdRemove(ctx context.Context, n *Node, id uint64) error {
	_, ec, err := realNodeEtcd{n: n}.remote(ctx)
	if err != nil {
		return err
	}

	return s.removeRealMember(ctx, n, ec, id)
}

func (m *machined) EtcdLeaveCluster(context.Context, *machine.EtcdLeaveClusterRequest) (*machine.EtcdLeaveClusterResponse, error) {
	cfg, err := m.current()
	if err != nil {
		return nil, err
	}

	if err := checkControlplane(cfg, "etcd leave"); err != nil {
		return nil, err
	}

	if err := m.node.leaveEtcd(m.node.ctx); err != nil {
		return nil, err
	}

	return &machine.EtcdLeaveClusterResponse{Messages: []*machine.EtcdLeaveCluster{{}}}, nil
}

// leaveEtcd removes this node's member (etcd.Client.LeaveCluster: retry
// while etcd says the cluster is unhealthy, up to five minutes), stops etcd
// and deletes its data.
func (n *Node) leaveEtcd(ctx context.Context) error {
	s := n.sim
	deadline := time.Now().Add(5 * time.Minute) // etcd's own clock: not scaled

	for {
		id, dir, err := n.removeOwnMember(ctx)

		switch {
		case id != 0 && (err == nil || errors.Is(err, errEtcdMemberNotFound)):
			// Talos stops etcd and deletes its data after leaving
			// (v1alpha1_sequencer_tasks.go LeaveEtcd).
			removeEtcdData(dir)

			if err := n.updateState(func(ps *persistState) { ps.etcdCluster, ps.etcdMember, ps.etcdData = 0, 0, "" }); err != nil {
				return fmt.Errorf("failed to leave cluster: %w", err)
			}

			n.logf("left the etcd cluster", "member", fmt.Sprintf("%x", id))
			n.publish()
			s.nudge()

			return nil
		case errors.Is(err, errEtcdUnhealthy) && time.Now().Before(deadline):
			if !s.sleep(ctx, 10*time.Second) {
				return ctx.Err()
			}

			if !sleepCtx(ctx, time.Second) { // etcd's HealthInterval is real time
				return ctx.Err()
			}
		case id == 0, errors.Is(err, errLeaveClient):
			return err
		default:
			return fmt.Errorf("failed to leave cluster: failed to remove member %d: %w", id, err)
		}
	}
}

var errLeaveClient = errors.New("failed to create etcd client")

// removeOwnMember removes this node's member through the endpoints; it
// returns the member's ID and data directory.
func (n *Node) removeOwnMember(ctx context.Context) (uint64, string, error) {
	s := n.sim

	s.mu.Lock()

	if n.ps == nil || n.ps.etcdMember == 0 {
		s.mu.Unlock()

		return 0, "", errors.New("failed to leave cluster: error getting local member ID: etcd member resource not found")
	}

	id, dir := n.ps.etcdMember, n.ps.etcdData
	s.mu.Unlock()

	_, ec, err := realNodeEtcd{n: n}.remote(ctx)
	if err != nil {
		return id, dir, fmt.Errorf("%w: %w", errLeaveClient, err)
	}

	return id, dir, s.removeRealMember(ctx, n, ec, id)
}

// sleepCtx waits d unless ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()

	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func joinPort(addr string, port int) string {
	return fmt.Sprintf("%s:%d", addr, port)
}

// etcdFailure returns an etcd client error after the time it takes: dialing
// endpoints where nothing listens ends with the client's dial timeout.
func (s *Sim) etcdFailure(ctx context.Context, err error) error {
	if errors.Is(err, errEtcdDial) {
		s.etcdDialTimeouts.Add(1)
		s.sleep(ctx, 5*time.Second)
	}

	return err
}

// EtcdDialTimeouts is how many etcd calls through the Talos API (machined's
// etcd client) have waited out the client's dial timeout: each costs its
// caller 5 s at time scale 1.
func (s *Sim) EtcdDialTimeouts() int {
	return int(s.etcdDialTimeouts.Load())
}
