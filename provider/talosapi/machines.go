package talosapi

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MachineChecker knows whether the machine behind a node address runs: for
// a Proxmox VM, what Proxmox says about it. Talos cannot tell a node that
// reboots from one whose machine is off; Proxmox can. Waits ask it when
// nothing answers at a node's address, so that a wait on a node whose VM is
// stopped (its host restarted and the start failed, or someone stopped it)
// ends with that reason instead of at its timeout.
type MachineChecker interface {
	// Down returns a *MachineDownError when the machine behind node is off
	// or gone for good, as far as the checker can tell; nil when it runs,
	// when its state is unknown (no machine known for the address, its
	// host does not answer, a host that just booted may still start it),
	// or when it was asked too recently to ask again. It is called after
	// every failed attempt to reach the node, so it limits its own pace.
	Down(ctx context.Context, node string) error
}

// MachineNotes is a MachineChecker that also hears how the waits on a
// node go, so that it asks its platform only about a silence nothing else
// explains.
type MachineNotes interface {
	MachineChecker
	// Answered: the node answered an attempt, so its machine runs.
	Answered(node string)
	// Silent: the provider just told the node to do what keeps it silent
	// for up to d (an install, an upgrade, a reboot).
	Silent(node string, d time.Duration)
}

// Expected silences of a node the provider told to change, with room for
// a slower machine or registry than the lab's realistic durations
// (tests/lab/talos/sim.go: install 25 s, reboot 15 s, boot 20 s).
const (
	// installSilence: an install from maintenance mode or an upgrade
	// (pull the installer, write the disk, reboot, boot): 60 s there.
	installSilence = 75 * time.Second
	// rebootSilence: a configuration applied with a reboot: 35 s there.
	rebootSilence = 45 * time.Second
	// certSilence: a worker installed from maintenance mode answers only
	// once trustd on a control plane, reached through the cluster
	// endpoint, gave its apid a certificate: on a new cluster, after the
	// first control plane's install, its bootstrap and its VIP (the
	// lab's 3+2 create: about 72 s after the worker's install began).
	certSilence = 30 * time.Second
)

// machineAnswered tells o.Machines that t's node answered.
func (o Options) machineAnswered(t Target) {
	if n, ok := o.Machines.(MachineNotes); ok {
		n.Answered(t.Node)
	}
}

// machineSilent tells o.Machines that t's node is to be silent for up to d.
func (o Options) machineSilent(t Target, d time.Duration) {
	if n, ok := o.Machines.(MachineNotes); ok && d > 0 {
		n.Silent(t.Node, d)
	}
}

// MachineDownError: the machine behind a node address is not running, so
// nothing will answer there until someone starts it.
type MachineDownError struct {
	// Node is the Talos node address.
	Node string
	// Machine names the machine ("VM 104 on Proxmox node pve2").
	Machine string
	// State is what its platform says: "stopped", "paused", "gone" (no
	// such VM any more).
	State string
	// For is how long it has been seen in that state, as a short text
	// ("45s").
	For string
	// Advice says what to do.
	Advice string
}

func (e *MachineDownError) Error() string {
	state := "is " + e.State
	if e.State == "gone" {
		state = "no longer exists"
	}

	msg := fmt.Sprintf("node %s does not answer: its machine, %s, %s", e.Node, e.Machine, state)
	if e.For != "" {
		msg += " (for " + e.For + " at least)"
	}

	msg += ", so waiting for the node is pointless"
	if e.Advice != "" {
		msg += ". " + e.Advice
	}

	return msg
}

// machineDown asks o.Machines about a node that did not answer; a
// *MachineDownError comes back wrapped to end the wait at once.
func (o Options) machineDown(ctx context.Context, t Target) error {
	if o.Machines == nil {
		return nil
	}

	if err := o.Machines.Down(ctx, t.Node); err != nil {
		return stop(err)
	}

	return nil
}

// asMachineDown finds a *MachineDownError in err.
func asMachineDown(err error) (*MachineDownError, bool) {
	var md *MachineDownError

	ok := errors.As(err, &md)

	return md, ok
}
