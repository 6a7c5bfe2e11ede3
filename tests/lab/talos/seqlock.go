package talos

import (
	"github.com/siderolabs/talos/pkg/machinery/api/common"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
)

// machined runs one sequence at a time (siderolabs/talos v1.12.5 and
// v1.14.0-rc.1 runtime/v1alpha1/v1alpha1_controller.go Run, through
// v1alpha1_priority_lock.go): a sequence requested while another runs starts
// only if it may take the other over (runtime/sequencer.go
// sequenceTakeOver); otherwise Run publishes a NOOP SequenceEvent with
// Code LOCKED, "sequence not started: locked", with no actor ID (it
// publishes with context.Background()), and returns. The API call that
// asked for it (Upgrade, Reset, Reboot, ApplyConfiguration with a reboot)
// has already answered with its actor ID: Run is started in a goroutine
// after the answer is built, so the caller learns nothing from the call.
var sequenceTakeOver = map[string][]string{
	"boot":   {"reboot", "reset", "upgrade"},
	"reboot": {"reboot"},
	"reset":  {"reboot"},
}

// canTakeOver reports whether sequence requested may start while running
// runs ("" when none).
func canTakeOver(requested, running string) bool {
	if running == "" {
		return true
	}

	for _, s := range sequenceTakeOver[running] {
		if s == requested {
			return true
		}
	}

	return false
}

// request asks the node to run sequence seq (the event ev): it is started,
// or refused as locked, at once, as machined's goroutine takes the lock
// right after the API call answered. It reports whether it was started.
func (n *Node) request(seq string, ev nodeEvent) bool {
	n.sim.mu.Lock()
	running := n.seqRunning
	ok := canTakeOver(seq, running)

	if ok {
		n.seqRunning = seq
	}
	n.sim.mu.Unlock()

	if !ok {
		n.logf(seq+" failed", "error", "locked", "running", running)

		if b := n.eventsOf(); b != nil {
			b.publish(&machine.SequenceEvent{
				Sequence: seq,
				Action:   machine.SequenceEvent_NOOP,
				Error:    &common.Error{Code: common.Code_LOCKED, Message: "sequence not started: locked"},
			}, "")
		}

		return false
	}

	n.send(ev)

	return true
}

// takeOver asks for sequence seq with machined's takeover option
// (runtime.WithTakeover), as Shutdown, the ACPI power button and
// ApplyConfiguration's reboot do (siderolabs/talos v1.12.9 to v1.14.0-rc.1
// v1alpha1_server.go Shutdown and ApplyConfiguration,
// v1alpha1_controller.go listenForACPI): PriorityLock.Lock never answers
// ErrLocked then; it cancels the running sequence and takes the lock once
// that one ended, waiting a minute at most (v1alpha1_priority_lock.go).
// The lab cancels the install of a staged upgrade (holdInstall); its other
// sequences run in the node's loop to their end, which drops the request
// with the boot when they reboot or power off, as when the minute passes.
func (n *Node) takeOver(seq string, ev nodeEvent) {
	n.sim.mu.Lock()
	n.seqRunning = seq
	n.sim.mu.Unlock()

	n.send(ev)
}

// sequenceEnded releases the lock of sequence seq that ended with the
// machine still running (a failed reset), unless another took it over.
func (n *Node) sequenceEnded(seq string) {
	n.sim.mu.Lock()
	if n.seqRunning == seq {
		n.seqRunning = ""
	}
	n.sim.mu.Unlock()
}
