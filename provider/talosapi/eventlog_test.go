package talosapi

import (
	"fmt"
	"sync"

	"github.com/siderolabs/talos/pkg/machinery/api/common"
	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// eventLog is machined's event stream of one boot as its Events API serves
// it (siderolabs/talos v1.14.0-rc.1 v1alpha1_server.go Events,
// v1alpha1_events.go Watch): a hello event with a new ID first, then the
// events after tail_id, all kept ones with tail_events -1, or those
// published from now; with_actor_id drops other actors' events. IDs sort as
// xids of one machined do (by time).
type eventLog struct {
	mu      sync.Mutex
	events  []*machineapi.Event
	ids     int
	changed chan struct{} // closed and replaced on each publish
}

func (l *eventLog) newID() string {
	l.ids++

	return fmt.Sprintf("%020d", l.ids)
}

func (l *eventLog) publish(msg proto.Message, actor string) {
	value, err := proto.Marshal(msg)
	if err != nil {
		panic(err)
	}

	l.mu.Lock()
	defer l.mu.Unlock()

	l.events = append(l.events, &machineapi.Event{
		Data:    &anypb.Any{TypeUrl: "talos/runtime/" + string(msg.ProtoReflect().Descriptor().FullName()), Value: value},
		Id:      l.newID(),
		ActorId: actor,
	})

	if l.changed != nil {
		close(l.changed)
	}

	l.changed = make(chan struct{})
}

// publishLocked publishes what Run does for a sequence refused by the lock:
// a NOOP with code LOCKED and no actor (v1alpha1_controller.go Run).
func (l *eventLog) publishLocked(seq string) {
	l.publish(&machineapi.SequenceEvent{Sequence: seq, Action: machineapi.SequenceEvent_NOOP,
		Error: &common.Error{Code: common.Code_LOCKED, Message: "sequence not started: locked"}}, "")
}

// publishFailed publishes a sequence that started for actor and failed.
func (l *eventLog) publishFailed(seq, actor, msg string) {
	l.publish(&machineapi.SequenceEvent{Sequence: seq, Action: machineapi.SequenceEvent_START}, actor)
	l.publish(&machineapi.SequenceEvent{Sequence: seq, Action: machineapi.SequenceEvent_NOOP,
		Error: &common.Error{Code: common.Code_FATAL, Message: msg}}, actor)
}

func (l *eventLog) serve(in *machineapi.EventsRequest, srv grpc.ServerStreamingServer[machineapi.Event]) error {
	l.mu.Lock()
	hello := &machineapi.Event{Data: &anypb.Any{}, Id: l.newID(), ActorId: in.GetWithActorId()}

	pos := len(l.events)

	switch {
	case in.GetTailEvents() < 0:
		pos = 0
	case in.GetTailId() != "":
		pos = 0
		for pos < len(l.events) && l.events[pos].GetId() <= in.GetTailId() {
			pos++
		}
	}
	l.mu.Unlock()

	if err := srv.Send(hello); err != nil {
		return err
	}

	for {
		l.mu.Lock()
		pending := append([]*machineapi.Event(nil), l.events[pos:]...)
		pos = len(l.events)

		if l.changed == nil {
			l.changed = make(chan struct{})
		}

		changed := l.changed
		l.mu.Unlock()

		for _, ev := range pending {
			if in.GetWithActorId() != "" && ev.GetActorId() != in.GetWithActorId() {
				continue
			}

			if err := srv.Send(ev); err != nil {
				return err
			}
		}

		select {
		case <-changed:
		case <-srv.Context().Done():
			return nil
		}
	}
}
