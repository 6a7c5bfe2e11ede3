package plan

import (
	"fmt"
	"slices"
	"strings"
)

// Power is the state of a node's VM as Proxmox reported it before planning.
type Power string

// The states the plan tells apart.
const (
	// PowerNone: no VM (a new node).
	PowerNone Power = ""
	// PowerRunning: the VM runs.
	PowerRunning Power = "running"
	// PowerStopped: the VM exists and does not run (stopped outside
	// Pulumi, a start that failed, its host restarted).
	PowerStopped Power = "stopped"
	// PowerPaused: the VM's qemu runs with its vCPUs stopped (paused in
	// Proxmox, or suspended by its guest): nothing in it runs until it is
	// resumed.
	PowerPaused Power = "paused"
	// PowerUnknown: the VM's Proxmox node is offline, so nothing about the
	// VM can be checked.
	PowerUnknown Power = "unknown"
	// PowerMissing: the node has no VM although it existed (the cluster
	// knows it or, when the cluster's members cannot be read, the stack's
	// state holds its VM: Membership): deleted outside Pulumi, a new VM
	// takes its place.
	PowerMissing Power = "missing"
)

// powerOf classifies a status of GET /cluster/resources (pve-manager
// PVE/API2Tools.pm extract_vm_stats: "running", "stopped", "unknown" when
// its node reports nothing, and for a qemu that runs its QMP run state,
// "paused", "suspended", "prelaunch", ...: pvestatd update_qemu_status
// broadcasts qmpstatus || status).
func powerOf(status string) Power {
	switch status {
	case "running":
		return PowerRunning
	case "paused", "suspended": // what status/resume continues
		return PowerPaused
	case "unknown", "":
		return PowerUnknown
	}
	return PowerStopped
}

// power is what the plan knows of a node's VM (Node.Power).
func (b *builder) power(s *slot) Power {
	switch {
	case s.prev != nil:
		return s.prev.Power
	case b.facts.known(s.name):
		return PowerMissing
	}
	return PowerNone
}

// Missing lists the nodes whose VM is gone although the cluster knows
// them, in plan order.
func (p *Plan) Missing() []*Node {
	var out []*Node
	for i := range p.Nodes {
		if n := &p.Nodes[i]; n.Power == PowerMissing {
			out = append(out, n)
		}
	}
	return out
}

// Down lists the existing nodes whose VM does not run, in plan order.
func (p *Plan) Down() []*Node {
	var out []*Node
	for i := range p.Nodes {
		if n := &p.Nodes[i]; n.Existing && n.Power != PowerRunning {
			out = append(out, n)
		}
	}
	return out
}

// PowerNotes says, one line per node, what the update does about a VM that
// does not run: a stopped VM is started first, a paused one resumed (the
// update repairs it without a refresh); one on an offline Proxmox node
// cannot be checked; one whose last operation failed part-way (Unfinished)
// has it run again.
func (p *Plan) PowerNotes() []string {
	var out []string
	for _, n := range p.Missing() {
		out = append(out, fmt.Sprintf("%s: VM missing (deleted outside Pulumi), will be created again at %s and rejoin the cluster", n.Name, addressOnly(n.VM.NICs[0].Address)))
	}
	for _, n := range p.Down() {
		vm := fmt.Sprintf("VM %d on %s", n.VM.VMID, n.VM.Host)
		switch n.Power {
		case PowerUnknown:
			out = append(out, fmt.Sprintf("%s: %s is unknown (%s is offline or does not answer): not checked", n.Name, vm, n.VM.Host))
		case PowerPaused:
			out = append(out, fmt.Sprintf("%s: %s paused, will be resumed", n.Name, vm))
		default:
			out = append(out, fmt.Sprintf("%s: %s stopped, will be started", n.Name, vm))
		}
	}
	for i := range p.Nodes {
		if n := &p.Nodes[i]; n.Unfinished {
			out = append(out, fmt.Sprintf("%s: the last create or update of VM %d on %s did not finish; pulumi up runs it again", n.Name, n.VM.VMID, n.VM.Host))
		}
	}
	return out
}

// Quorum says what etcd has while control planes of the cluster are down
// ("" when every control plane's VM runs): the members are the existing
// control planes, and etcd needs a majority of them running.
func (p *Plan) Quorum() string {
	var total, running int
	var down []string
	for i := range p.Nodes {
		n := &p.Nodes[i]
		if !n.Existing && n.Power != PowerMissing || n.Role != RoleControlPlane {
			continue
		}
		total++
		if n.Power == PowerRunning {
			running++
		} else {
			down = append(down, n.Name)
		}
	}
	if len(down) == 0 {
		return ""
	}
	state := "quorum kept"
	if running <= total/2 {
		state = "quorum lost: the cluster accepts no change until a majority runs"
	}
	return fmt.Sprintf("etcd: %d of %d control planes running (%s not), %s", running, total, strings.Join(down, ", "), state)
}

// uncheckedWhy is why an added node is not known to be new (Plan.Unchecked).
const uncheckedWhy = "not checked for a VM deleted outside Pulumi"

// MarkPower adds to s what the update does about VMs that do not run or
// are missing: a missing node is created again, not added; an added node
// that may have had a VM says so.
func (p *Plan) MarkPower(s *Summary) {
	for _, n := range p.Missing() {
		for i := range s.Nodes {
			if c := &s.Nodes[i]; c.Name == n.Name && c.Action == ActionAdd {
				c.Action, c.Why, c.Reasons = ActionRecreate, []string{"VM deleted outside Pulumi"}, []string{"VM deleted outside Pulumi"}
			}
		}
	}
	for i := range s.Nodes {
		if c := &s.Nodes[i]; c.Action == ActionAdd && slices.Contains(p.Unchecked, c.Name) {
			c.Why, c.Reasons = []string{uncheckedWhy}, []string{uncheckedWhy}
		}
	}
	for _, n := range p.Down() {
		switch n.Power {
		case PowerUnknown:
			s.Unknown = append(s.Unknown, n.Name)
		case PowerPaused:
			s.Resumed = append(s.Resumed, n.Name)
		default:
			s.Started = append(s.Started, n.Name)
		}
	}
	s.Quorum = p.Quorum()
}
