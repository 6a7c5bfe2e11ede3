package talos

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/siderolabs/talos/pkg/machinery/api/common"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
)

// machined's etcd maintenance API (v1alpha1_server.go: EtcdStatus,
// EtcdAlarmList, EtcdAlarmDisarm, EtcdDefragment, EtcdForfeitLeadership;
// talosctl etcd status|alarm list|alarm disarm|defrag|forfeit-leadership),
// answered through the node's etcd client (Node.Etcd) with Talos's
// control plane check and error wrapping.

// etcdErr wraps an etcd client error as Talos does: a member that does not
// answer fails the client's creation (etcd.NewLocalClient dials with a
// timeout), anything else fails the call itself.
func etcdErr(call string, err error) error {
	if errors.Is(err, errEtcdDial) {
		return fmt.Errorf("failed to create etcd client: %w", err)
	}

	return fmt.Errorf("%s: %w", call, err)
}

func (m *machined) etcdOnControlPlane(what string) error {
	cfg, err := m.current()
	if err != nil {
		return err
	}

	return checkControlplane(cfg, what)
}

func (m *machined) EtcdStatus(ctx context.Context, _ *emptypb.Empty) (*machine.EtcdStatusResponse, error) {
	if err := m.etcdOnControlPlane("etcd status"); err != nil {
		return nil, err
	}

	st, err := m.node.Etcd().Status(ctx)
	if err != nil {
		return nil, etcdErr("failed to query etcd status", err)
	}

	return &machine.EtcdStatusResponse{Messages: []*machine.EtcdStatus{{MemberStatus: &machine.EtcdMemberStatus{
		MemberId:         st.MemberID,
		ProtocolVersion:  st.Version,
		StorageVersion:   st.StorageVersion,
		DbSize:           st.DBSize,
		DbSizeInUse:      st.DBSizeInUse,
		Leader:           st.Leader,
		RaftIndex:        st.RaftIndex,
		RaftTerm:         st.RaftTerm,
		RaftAppliedIndex: st.RaftAppliedIndex,
		Errors:           st.Errors,
		IsLearner:        st.IsLearner,
	}}}}, nil
}

func (m *machined) EtcdAlarmList(ctx context.Context, _ *emptypb.Empty) (*machine.EtcdAlarmListResponse, error) {
	if err := m.etcdOnControlPlane("etcd alarm list"); err != nil {
		return nil, err
	}

	alarms, err := m.node.Etcd().Alarms(ctx)
	if err != nil {
		return nil, etcdErr("failed to list etcd alarms", err)
	}

	return &machine.EtcdAlarmListResponse{Messages: []*machine.EtcdAlarm{{MemberAlarms: memberAlarms(alarms)}}}, nil
}

func (m *machined) EtcdAlarmDisarm(ctx context.Context, _ *emptypb.Empty) (*machine.EtcdAlarmDisarmResponse, error) {
	if err := m.etcdOnControlPlane("etcd alarm disarm"); err != nil {
		return nil, err
	}

	alarms, err := m.node.Etcd().DisarmAlarms(ctx)
	if err != nil {
		return nil, etcdErr("failed to disarm etcd alarm", err)
	}

	return &machine.EtcdAlarmDisarmResponse{Messages: []*machine.EtcdAlarmDisarm{{MemberAlarms: memberAlarms(alarms)}}}, nil
}

func (m *machined) EtcdDefragment(ctx context.Context, _ *emptypb.Empty) (*machine.EtcdDefragmentResponse, error) {
	if err := m.etcdOnControlPlane("etcd defragment"); err != nil {
		return nil, err
	}

	if err := m.node.Etcd().Defragment(ctx); err != nil {
		return nil, etcdErr("failed to defragment etcd", err)
	}

	return &machine.EtcdDefragmentResponse{Messages: []*machine.EtcdDefragment{{}}}, nil
}

func (m *machined) EtcdForfeitLeadership(ctx context.Context, _ *machine.EtcdForfeitLeadershipRequest) (*machine.EtcdForfeitLeadershipResponse, error) {
	if err := m.etcdOnControlPlane("etcd forfeit leadership"); err != nil {
		return nil, err
	}

	leader, err := m.node.Etcd().ForfeitLeadership(ctx)
	if err != nil {
		return nil, etcdErr("failed to forfeit leadership", err)
	}

	return &machine.EtcdForfeitLeadershipResponse{Messages: []*machine.EtcdForfeitLeadership{{Member: leader}}}, nil
}

func memberAlarms(alarms []EtcdAlarm) []*machine.EtcdMemberAlarm {
	out := make([]*machine.EtcdMemberAlarm, 0, len(alarms))

	for _, a := range alarms {
		out = append(out, &machine.EtcdMemberAlarm{
			MemberId: a.MemberID,
			Alarm:    machine.EtcdMemberAlarm_AlarmType(machine.EtcdMemberAlarm_AlarmType_value[a.Alarm]),
		})
	}

	return out
}

// EtcdSnapshot streams a snapshot of the keyspace (v1alpha1_server.go
// EtcdSnapshot: the local member's Maintenance.Snapshot in chunks).
func (m *machined) EtcdSnapshot(_ *machine.EtcdSnapshotRequest, srv machine.MachineService_EtcdSnapshotServer) error {
	if err := m.etcdOnControlPlane("etcd snapshot"); err != nil {
		return err
	}

	w := &chunkWriter{send: func(b []byte) error { return srv.Send(&common.Data{Bytes: b}) }}

	if err := m.node.Etcd().Snapshot(srv.Context(), w); err != nil {
		return etcdErr("failed reading etcd snapshot", err)
	}

	return nil
}

// chunkWriter sends what is written as stream messages.
type chunkWriter struct{ send func([]byte) error }

func (c *chunkWriter) Write(b []byte) (int, error) {
	if err := c.send(append([]byte(nil), b...)); err != nil {
		return 0, err
	}

	return len(b), nil
}
