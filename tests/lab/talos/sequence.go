package talos

import (
	"google.golang.org/protobuf/proto"

	"github.com/siderolabs/talos/pkg/machinery/api/common"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
)

// sequence publishes the events of a machined sequence run on behalf of an
// API call (runtime/v1alpha1/v1alpha1_controller.go: a SequenceEvent START,
// then per phase a PhaseEvent and its tasks' TaskEvents, all carrying the
// call's actor ID). Sequences that end in a reboot or power-off never
// publish their STOP: the machine goes down first.
type sequence struct {
	name   string
	actor  string
	events *eventBuffer
}

// sequencePhase is one phase of a sequence and its task.
type sequencePhase struct{ name, task string }

// shutdownPhases are the phases of Reboot and Shutdown up to stopping the
// services (v1alpha1_sequencer.go, stopAllPhaselist on metal).
var shutdownPhases = []sequencePhase{
	{"cleanup", "stopAllPods"},
	{"dbus", "stopDBus"},
	{"stopServices", "stopServicesEphemeral"},
	{"umount", "unmountPodMounts"},
	{"unmountBind", "unmountSystemDiskBindMounts"},
	{"unmountSystem", "unmountEphemeralPartition"},
	{"volumeFinalize", "teardownVolumeLifecycle"},
	{"kexec", "kexecPrepare"},
	{"stopEverything", "stopAllServices"},
}

// upgradePhases are Upgrade's phases after the drain, up to the install.
var upgradePhases = []sequencePhase{
	{"cleanup", "stopAllPods"},
	{"dbus", "stopDBus"},
	{"stopServices", "stopServicesEphemeral"},
	{"unmount", "unmountPodMounts"},
	{"unmountBind", "unmountSystemDiskBindMounts"},
	{"unmountSystem", "unmountEphemeralPartition"},
	{"volumeFinalize", "teardownVolumeLifecycle"},
	{"upgrade", "upgrade"},
}

func (n *Node) startSequence(name, actor string) *sequence {
	seq := &sequence{name: name, actor: actor, events: n.eventsOf()}
	seq.publish(&machine.SequenceEvent{Sequence: name, Action: machine.SequenceEvent_START})

	return seq
}

func (seq *sequence) publish(msg proto.Message) {
	if seq.events != nil {
		seq.events.publish(msg, seq.actor)
	}
}

// phases publishes each phase with its task, started and stopped.
func (seq *sequence) phases(phases ...sequencePhase) {
	for _, p := range phases {
		seq.publish(&machine.PhaseEvent{Phase: p.name, Action: machine.PhaseEvent_START})
		seq.publish(&machine.TaskEvent{Task: p.task, Action: machine.TaskEvent_START})
		seq.publish(&machine.TaskEvent{Task: p.task, Action: machine.TaskEvent_STOP})
		seq.publish(&machine.PhaseEvent{Phase: p.name, Action: machine.PhaseEvent_STOP})
	}
}

// fail ends the sequence with its error, as a failed sequence reports it:
// its STOP, then a NOOP event with "sequence failed: <error>" for the actor
// (siderolabs/talos v1.12.5 v1alpha1_controller.go Run and run's deferred
// STOP).
func (seq *sequence) fail(err error) {
	seq.publish(&machine.SequenceEvent{Sequence: seq.name, Action: machine.SequenceEvent_STOP})
	seq.publish(&machine.SequenceEvent{
		Sequence: seq.name,
		Action:   machine.SequenceEvent_NOOP,
		Error:    &common.Error{Code: common.Code_FATAL, Message: "sequence failed: " + err.Error()},
	})
}
