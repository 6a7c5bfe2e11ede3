package talos

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
)

// eventBuffer is machined's in-memory event stream of one boot
// (internal/app/machined/pkg/runtime/v1alpha1/v1alpha1_events.go, v1.12.5):
// a ring of the last eventCapacity events; a watcher starts at the next
// event, or tail_events back, or right after tail_id (IDs are xids, which
// sort by time, so an ID from an earlier boot replays the whole new boot).
// The buffer dies with the boot: a reboot starts an empty one.
type eventBuffer struct {
	mu     sync.Mutex
	cond   *sync.Cond
	events []*machine.Event // the last eventCapacity events, oldest first
	next   int64            // position of the next event published
	closed bool
}

// NewEvents(1000, 10) in v1alpha1_controller.go: 990 events of history.
const eventCapacity = 1000 - 10

func newEventBuffer() *eventBuffer {
	b := &eventBuffer{}
	b.cond = sync.NewCond(&b.mu)

	return b
}

// publish appends an event (runtime.NewEvent + ToMachineEvent): its type URL
// is "talos/runtime/<message name>".
func (b *eventBuffer) publish(msg proto.Message, actorID string) {
	value, err := proto.Marshal(msg)
	if err != nil {
		return
	}

	ev := &machine.Event{
		Data:    &anypb.Any{TypeUrl: "talos/runtime/" + string(msg.ProtoReflect().Descriptor().FullName()), Value: value},
		Id:      newXID(),
		ActorId: actorID,
	}

	b.mu.Lock()
	defer b.mu.Unlock()

	if b.closed {
		return
	}

	b.events = append(b.events, ev)
	if len(b.events) > eventCapacity {
		b.events = b.events[1:]
	}

	b.next++
	b.cond.Broadcast()
}

// close ends every watch: machined's Events handler returns when the
// machine shuts down, and the client sees the stream end.
func (b *eventBuffer) close() {
	b.mu.Lock()
	b.closed = true
	b.cond.Broadcast()
	b.mu.Unlock()
}

// start is the position a watch begins at.
func (b *eventBuffer) start(req *machine.EventsRequest) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()

	oldest := b.next - int64(len(b.events))

	switch {
	case req.TailEvents < 0:
		return oldest, nil
	case req.TailEvents > 0:
		return max(b.next-int64(req.TailEvents), oldest), nil
	case req.TailId != "":
		if !validXID(req.TailId) {
			return 0, errors.New("error parsing tail_id: xid: invalid ID")
		}

		return oldest + int64(sort.Search(len(b.events), func(i int) bool { return b.events[i].Id > req.TailId })), nil
	case req.TailSeconds > 0:
		since := time.Now().Add(-time.Duration(req.TailSeconds) * time.Second)

		return oldest + int64(sort.Search(len(b.events), func(i int) bool { return xidTime(b.events[i].Id).After(since) })), nil
	default:
		return b.next, nil
	}
}

// wait returns the event at pos once there is one; false when ctx ended,
// the watcher fell behind the ring (the real stream then just ends), or the
// buffer closed with no event left at pos. Events published before the
// close still reach a watch: a sequence that failed publishes its error
// and machined counts "rebooting in 10 seconds" before the reboot ends the
// stream (siderolabs/talos v1.12.9 internal/app/machined/main.go handle),
// which the lab's time scale shortens, down to nothing at scale 0.
func (b *eventBuffer) wait(ctx context.Context, pos int64) (*machine.Event, bool) {
	stop := context.AfterFunc(ctx, func() {
		b.mu.Lock()
		b.cond.Broadcast()
		b.mu.Unlock()
	})
	defer stop()

	b.mu.Lock()
	defer b.mu.Unlock()

	for pos >= b.next && !b.closed && ctx.Err() == nil {
		b.cond.Wait()
	}

	oldest := b.next - int64(len(b.events))
	if ctx.Err() != nil || pos < oldest || pos >= b.next {
		return nil, false
	}

	return b.events[pos-oldest], true
}

// Events streams the boot's events after a first empty "hello" event
// (v1alpha1_server.go Events, sendEmptyEvent).
func (m *machined) Events(req *machine.EventsRequest, srv machine.MachineService_EventsServer) error {
	b := m.node.eventsOf()
	if b == nil {
		return status.Error(codes.Unavailable, "node is not running")
	}

	if err := srv.Send(&machine.Event{Data: &anypb.Any{}, Id: newXID(), ActorId: req.WithActorId}); err != nil {
		return err
	}

	pos, err := b.start(req)
	if err != nil {
		return err
	}

	for {
		ev, ok := b.wait(srv.Context(), pos)
		if !ok {
			return srv.Context().Err()
		}

		pos++

		if req.WithActorId != "" && ev.ActorId != req.WithActorId {
			continue
		}

		if err := srv.Send(ev); err != nil {
			return err
		}
	}
}

// xid IDs (github.com/rs/xid): 4 bytes of Unix time, 5 of machine and
// process, 3 of counter, in lowercase base32hex without padding (20
// characters, sorting as the bytes do).
var (
	xidEncoding = base32.NewEncoding("0123456789abcdefghijklmnopqrstuv").WithPadding(base32.NoPadding)
	xidMachine  = func() [5]byte {
		var b [5]byte
		_, _ = rand.Read(b[:])

		return b
	}()
	xidCounter atomic.Uint32
)

func newXID() string {
	var id [12]byte

	binary.BigEndian.PutUint32(id[:4], uint32(time.Now().Unix()))
	copy(id[4:9], xidMachine[:])

	c := xidCounter.Add(1)
	id[9], id[10], id[11] = byte(c>>16), byte(c>>8), byte(c)

	return xidEncoding.EncodeToString(id[:])
}

func validXID(s string) bool {
	b, err := xidEncoding.DecodeString(s)

	return err == nil && len(b) == 12 && len(s) == 20
}

func xidTime(s string) time.Time {
	b, err := xidEncoding.DecodeString(s)
	if err != nil || len(b) != 12 {
		return time.Time{}
	}

	return time.Unix(int64(binary.BigEndian.Uint32(b[:4])), 0)
}

// eventsOf is the event stream of the node's current boot (nil when off).
func (n *Node) eventsOf() *eventBuffer {
	n.sim.mu.Lock()
	defer n.sim.mu.Unlock()

	if n.servers == nil {
		return nil
	}

	return n.servers.events
}
