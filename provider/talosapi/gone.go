package talosapi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
)

// Answers reports whether the node answers on its Talos API, in any mode,
// within the given time. It is false when every attempt failed below TLS
// (refused, no route, timed out): nothing listens there, as when the node's
// VM is stopped, deleted or unreachable. A node that answers with something
// we cannot use (another cluster's certificate) answers. An error means the
// caller's context ended.
func Answers(ctx context.Context, t Target, o Options, within time.Duration) (bool, error) {
	wctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()

	conn, err := Connect(wctx, t, o)
	if err == nil {
		conn.Close() //nolint:errcheck

		return true, nil
	}

	if ctx.Err() != nil {
		return false, err
	}

	var we *WaitError
	if errors.As(err, &we) && (we.LastErr == nil || classify(we.LastErr) == failTransient) {
		return false, nil
	}

	return true, nil
}

// EtcdMemberRemoval says what RemoveEtcdMember did.
type EtcdMemberRemoval struct {
	// Found is false when the cluster had no member on the node (any more).
	Found bool
	// Hostname of the removed member; Via the control plane that removed it.
	Hostname, Via string
}

// RemoveEtcdMember removes the etcd member whose peer address is node
// through the first of controlPlanes (other than node) that answers: what a
// control plane that is gone for good cannot do itself by leaving (talosctl
// etcd remove-member). Each control plane is tried for at most perCP. It
// fails when none could be reached or etcd refused.
func RemoveEtcdMember(ctx context.Context, node string, controlPlanes []string, creds *Credentials, o Options, perCP time.Duration) (EtcdMemberRemoval, error) {
	o = o.withDefaults()

	var errs []error

	for _, cp := range controlPlanes {
		if SameHost(cp, node) {
			continue
		}

		res, err := removeMemberVia(ctx, node, Target{Node: cp, Creds: creds}, o, perCP)
		if err == nil {
			return res, nil
		}

		errs = append(errs, fmt.Errorf("%s: %w", cp, err))

		if ctx.Err() != nil {
			break
		}
	}

	if len(errs) == 0 {
		return EtcdMemberRemoval{}, fmt.Errorf("no other control plane to remove the etcd member of %s through", node)
	}

	return EtcdMemberRemoval{}, errors.Join(errs...)
}

func removeMemberVia(ctx context.Context, node string, via Target, o Options, within time.Duration) (EtcdMemberRemoval, error) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()

	conn, err := ConnectSecure(ctx, via, o)
	if err != nil {
		return EtcdMemberRemoval{}, err
	}
	defer conn.Close() //nolint:errcheck

	members, err := etcdMembers(ctx, o, conn)
	if err != nil {
		return EtcdMemberRemoval{}, err
	}

	i := slices.IndexFunc(members, func(m *machineapi.EtcdMember) bool {
		return slices.Contains(peerHosts(m.GetPeerUrls()), hostOf(node))
	})
	if i < 0 {
		return EtcdMemberRemoval{Via: via.Node}, nil
	}

	if err := removeMember(ctx, o, conn, members[i]); err != nil {
		return EtcdMemberRemoval{}, err
	}

	return EtcdMemberRemoval{Found: true, Hostname: members[i].GetHostname(), Via: via.Node}, nil
}

func etcdMembers(ctx context.Context, o Options, conn *Conn) ([]*machineapi.EtcdMember, error) {
	actx, cancel := o.attemptContext(ctx)
	defer cancel()

	resp, err := conn.client.EtcdMemberList(conn.nodeContext(actx), &machineapi.EtcdMemberListRequest{})
	if err != nil {
		return nil, fmt.Errorf("listing the etcd members: %s", statusMessage(err))
	}

	var out []*machineapi.EtcdMember
	for _, m := range resp.GetMessages() {
		out = append(out, m.GetMembers()...)
	}

	return out, nil
}

func removeMember(ctx context.Context, o Options, conn *Conn, m *machineapi.EtcdMember) error {
	actx, cancel := o.attemptContext(ctx)
	defer cancel()

	err := conn.client.EtcdRemoveMemberByID(conn.nodeContext(actx), &machineapi.EtcdRemoveMemberByIDRequest{MemberId: m.GetId()})
	if err != nil {
		return fmt.Errorf("removing etcd member %s (%x): %s", m.GetHostname(), m.GetId(), statusMessage(err))
	}

	return nil
}

// DownMember is an etcd member removed because its node does not answer.
type DownMember struct {
	Hostname, Address string
}

// clearDownMembers makes room for the node behind conn to leave etcd: etcd
// refuses to remove a running member when the running members that stay
// would not be a majority of the members that stay (EtcdServer.
// mayRemoveMember, strict reconfiguration check), so a control plane cannot
// leave while others are down. The members whose nodes do not answer (each
// probed for at most probe) are removed first, as many as the leave needs;
// a cluster that has lost its quorum accepts no removal and is left as is.
func clearDownMembers(ctx context.Context, o Options, conn *Conn, self Target, probe time.Duration) ([]DownMember, error) {
	members, err := etcdMembers(ctx, o, conn)
	if err != nil {
		return nil, err
	}

	var voting, down []*machineapi.EtcdMember

	for _, m := range members {
		if m.GetIsLearner() {
			continue
		}

		voting = append(voting, m)

		hosts := peerHosts(m.GetPeerUrls())
		if len(hosts) == 0 || slices.Contains(hosts, self.nodeHost()) {
			continue
		}

		ok, err := Answers(ctx, Target{Node: hosts[0], Creds: self.Creds}, o, probe)
		if err != nil {
			return nil, err
		}

		if !ok {
			down = append(down, m)
		}
	}

	var removed []DownMember

	for len(down) > 0 && !canLeave(len(voting), len(down)) {
		m := down[0]
		if err := removeMember(ctx, o, conn, m); err != nil {
			return removed, err
		}

		removed = append(removed, DownMember{Hostname: m.GetHostname(), Address: peerHosts(m.GetPeerUrls())[0]})
		voting = slices.DeleteFunc(voting, func(v *machineapi.EtcdMember) bool { return v.GetId() == m.GetId() })
		down = down[1:]
	}

	return removed, nil
}

// canLeave: after a running member leaves a cluster of voting members of
// which down are not running, the running ones still form a majority.
func canLeave(voting, down int) bool {
	stay := voting - 1
	running := stay - down

	return running >= stay/2+1
}
