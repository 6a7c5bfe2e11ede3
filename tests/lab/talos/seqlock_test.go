package talos

import (
	"context"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/api/common"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"google.golang.org/protobuf/proto"
)

// machined's priority lock (seqlock.go): a sequence requested while another
// runs starts only where sequenceTakeOver allows it. Before, the lab queued
// a second upgrade (or a reset) behind the running one and ran it after a
// sequence that ended without a reboot, which machined never does.
func TestSequenceLock(t *testing.T) {
	t.Parallel()

	s, _ := newSim(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	n := &Node{sim: s, ctx: ctx, events: make(chan nodeEvent, 4), servers: &nodeServers{events: newEventBuffer()}}

	for _, c := range []struct {
		running, requested string
		starts             bool
	}{
		{"", "upgrade", true},
		{"upgrade", "upgrade", false},
		{"upgrade", "reset", false},
		{"upgrade", "reboot", false},
		{"stageUpgrade", "upgrade", false},
		{"reset", "reset", false},
		{"reset", "reboot", true},
		{"reboot", "reboot", true},
		{"reboot", "upgrade", false},
		{"boot", "upgrade", true},
	} {
		s.mu.Lock()
		n.seqRunning = c.running
		s.mu.Unlock()

		before := n.servers.events.next
		if got := n.request(c.requested, nodeEvent{kind: evUpgrade, actor: "actor-1"}); got != c.starts {
			t.Errorf("%s requested while %q runs: started %v, want %v", c.requested, c.running, got, c.starts)
		}

		if c.starts {
			<-n.events // sent

			continue
		}

		b := n.servers.events
		if b.next != before+1 {
			t.Fatalf("%s while %s: %d events published, want the LOCKED one", c.requested, c.running, b.next-before)
		}

		ev := b.events[len(b.events)-1]

		var se machine.SequenceEvent
		if err := proto.Unmarshal(ev.GetData().GetValue(), &se); err != nil {
			t.Fatal(err)
		}

		if ev.GetActorId() != "" || se.GetSequence() != c.requested || se.GetAction() != machine.SequenceEvent_NOOP ||
			se.GetError().GetCode() != common.Code_LOCKED || se.GetError().GetMessage() != "sequence not started: locked" {
			t.Errorf("%s while %s: event actor %q %v, want machined's LOCKED NOOP without an actor", c.requested, c.running, ev.GetActorId(), &se)
		}

		select {
		case ev := <-n.events:
			t.Errorf("%s while %s: the sequence was queued (%v)", c.requested, c.running, ev.kind)
		default:
		}
	}
}

// A shutdown takes machined's lock over (takeOver: Run with WithTakeover,
// v1alpha1_server.go Shutdown): it starts whatever runs, and holds the lock
// while it runs, so that a reboot or an upgrade asked meanwhile is LOCKED
// (a reset that fails under it does not release it). Before, Shutdown
// skipped the lock: a reboot asked during it was queued and dropped with
// the boot, and no LOCKED said so.
func TestShutdownTakesTheLockOver(t *testing.T) {
	t.Parallel()

	s, _ := newSim(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	n := &Node{sim: s, ctx: ctx, events: make(chan nodeEvent, 4), servers: &nodeServers{events: newEventBuffer()}}

	for _, running := range []string{"", "upgrade", "reset", "install"} {
		s.mu.Lock()
		n.seqRunning = running
		s.mu.Unlock()

		n.takeOver("shutdown", nodeEvent{kind: evShutdown, actor: "actor-1"})

		if ev := <-n.events; ev.kind != evShutdown {
			t.Fatalf("shutdown while %q runs: sent %v", running, ev.kind)
		}

		n.sequenceEnded("reset")

		for _, seq := range []string{"reboot", "upgrade", "reset"} {
			if n.request(seq, nodeEvent{kind: evReboot}) {
				<-n.events
				t.Errorf("%s asked during a shutdown (which took over %q) started", seq, running)
			}
		}
	}
}
