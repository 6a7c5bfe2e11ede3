package talos

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
)

// realNodeEtcd answers machined's etcd calls from the node's real member
// or, for the calls Talos makes through the control plane endpoints, from
// the members reached through them: every number, list and refusal is
// etcd's own.
type realNodeEtcd struct{ n *Node }

// local is this node's member's client URL and its cluster's client.
func (e realNodeEtcd) local(ctx context.Context) (string, *etcdCluster, error) {
	n, s := e.n, e.n.sim

	s.mu.Lock()
	up := n.etcdProc != nil && n.etcd != nil && n.etcd.running
	addr, ec := n.addr, n.etcdCluster
	s.mu.Unlock()

	if !up || ec == nil || ec.real == nil {
		return "", nil, s.etcdFailure(ctx, errEtcdDial) // nothing listens on localhost:2379
	}

	return etcdClientURL(addr), ec, nil
}

// remote is the client Talos builds from the control plane endpoints.
func (e realNodeEtcd) remote(ctx context.Context) ([]string, *etcdCluster, error) {
	n, s := e.n, e.n.sim

	s.mu.Lock()
	nodes, ok := s.endpointNodes(n)

	var ec *etcdCluster

	for _, cp := range nodes {
		if cp.etcdProc != nil && cp.etcdCluster != nil && cp.etcdCluster.real != nil {
			ec = cp.etcdCluster

			break
		}
	}

	var urls []string
	if ec != nil {
		urls = s.memberURLs(n, ec)
	}
	s.mu.Unlock()

	switch {
	case !ok:
		return nil, nil, errNoEndpoints
	case ec == nil || len(urls) == 0:
		return nil, nil, s.etcdFailure(ctx, errEtcdDial)
	}

	return urls, ec, nil
}

func (e realNodeEtcd) Members(ctx context.Context, local bool) ([]EtcdMemberInfo, error) {
	var (
		urls []string
		ec   *etcdCluster
		err  error
	)

	if local {
		var u string

		u, ec, err = e.local(ctx)
		urls = []string{u}
	} else {
		urls, ec, err = e.remote(ctx)
	}

	if err != nil {
		return nil, err
	}

	list, err := ec.real.memberList(ctx, urls)
	if err != nil {
		return nil, err
	}

	out := make([]EtcdMemberInfo, 0, len(list))

	for _, m := range list {
		out = append(out, EtcdMemberInfo{ID: uint64(m.ID), Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLearner: m.IsLearner})
	}

	return out, nil
}

func (e realNodeEtcd) Status(ctx context.Context) (EtcdMemberStatus, error) {
	u, ec, err := e.local(ctx)
	if err != nil {
		return EtcdMemberStatus{}, err
	}

	st, err := ec.real.status(ctx, u)
	if err != nil {
		return EtcdMemberStatus{}, err
	}

	return EtcdMemberStatus{
		MemberID: uint64(st.Header.MemberID), Version: st.Version, StorageVersion: st.StorageVersion,
		DBSize: int64(st.DBSize), DBSizeInUse: int64(st.DBSizeInUse), Leader: uint64(st.Leader),
		RaftIndex: uint64(st.RaftIndex), RaftTerm: uint64(st.RaftTerm), RaftAppliedIndex: uint64(st.RaftAppliedIndex),
		Errors: st.Errors, IsLearner: st.IsLearner,
	}, nil
}

func (e realNodeEtcd) Alarms(ctx context.Context) ([]EtcdAlarm, error) {
	u, ec, err := e.local(ctx)
	if err != nil {
		return nil, err
	}

	return ec.real.alarm(ctx, u, "GET", EtcdAlarm{})
}

// DisarmAlarms is clientv3's AlarmDisarm of the empty member
// (client/v3/maintenance.go): list the alarms, deactivate each.
func (e realNodeEtcd) DisarmAlarms(ctx context.Context) ([]EtcdAlarm, error) {
	u, ec, err := e.local(ctx)
	if err != nil {
		return nil, err
	}

	alarms, err := ec.real.alarm(ctx, u, "GET", EtcdAlarm{})
	if err != nil {
		return nil, err
	}

	var out []EtcdAlarm

	for _, a := range alarms {
		got, err := ec.real.alarm(ctx, u, "DEACTIVATE", a)
		if err != nil {
			return out, err
		}

		out = append(out, got...)
	}

	return out, nil
}

func (e realNodeEtcd) Defragment(ctx context.Context) error {
	u, ec, err := e.local(ctx)
	if err != nil {
		return err
	}

	return ec.real.invoke(ctx, []string{u}, "/v3/maintenance/defragment", struct{}{}, &struct{}{}, false)
}

// ForfeitLeadership is Talos's (internal/pkg/etcd ForfeitLeadership): when
// this member leads, MoveLeader to another voting member.
func (e realNodeEtcd) ForfeitLeadership(ctx context.Context) (string, error) {
	u, ec, err := e.local(ctx)
	if err != nil {
		return "", err
	}

	st, err := ec.real.status(ctx, u)
	if err != nil {
		return "", err
	}

	if st.Leader != st.Header.MemberID {
		return "", nil
	}

	list, err := ec.real.memberList(ctx, []string{u})
	if err != nil {
		return "", err
	}

	for _, m := range list {
		if m.ID == st.Header.MemberID || m.IsLearner {
			continue
		}

		err := ec.real.invoke(ctx, []string{u}, "/v3/maintenance/transfer-leadership", map[string]any{"targetID": strconv.FormatUint(uint64(m.ID), 10)}, &struct{}{}, true)
		if err != nil {
			return "", err
		}

		return m.Name, nil
	}

	return "", nil
}

// Snapshot streams Maintenance.Snapshot of this node's member.
func (e realNodeEtcd) Snapshot(ctx context.Context, w io.Writer) error {
	u, ec, err := e.local(ctx)
	if err != nil {
		return err
	}

	resp, err := ec.real.post(ctx, u, "/v3/maintenance/snapshot", struct{}{}, false)
	if err != nil {
		return err
	}
	defer resp.Body.Close() //nolint:errcheck

	return copySnapshotStream(resp.Body, w)
}

func (e realNodeEtcd) RemoveMember(ctx context.Context, id uint64) error {
	return e.n.sim.etcdRemove(ctx, e.n, id)
}

func (e realNodeEtcd) Leave(ctx context.Context) error { return e.n.leaveEtcd(ctx) }

// copySnapshotStream writes the blobs of a gateway snapshot stream (one
// JSON message per chunk: the bbolt database, then its sha256).
func copySnapshotStream(r io.Reader, w io.Writer) error {
	dec := json.NewDecoder(r)

	for {
		var chunk struct {
			Result struct {
				Blob []byte `json:"blob"`
			} `json:"result"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}

		if err := dec.Decode(&chunk); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}

			return err
		}

		if chunk.Error != nil {
			return etcdError(chunk.Error.Message)
		}

		if _, err := w.Write(chunk.Result.Blob); err != nil {
			return err
		}
	}
}
