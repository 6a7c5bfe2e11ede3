package plan

import (
	"fmt"
	"strings"
)

// Membership says, apart from Proxmox, which nodes of an existing cluster
// existed before this run. Proxmox only shows the VMs that are there: a
// planned node without a VM is new, unless it existed and its VM was
// deleted outside Pulumi; then it is created again where it was
// (PowerMissing), not added. The cluster's own view decides first; when it
// cannot be read in full (a control plane paused or slow, its Kubernetes
// API not answering in time), the stack's state does, so that a read that
// timed out never turns a node Pulumi created into a new one.
type Membership struct {
	// Members are the nodes the cluster itself knows (its Kubernetes Node
	// objects and etcd members) with their address; nil when not asked.
	Members map[string]string
	// Unread says why the cluster could not say in full which nodes it
	// knows ("" when it did, or was not asked). Members then holds what it
	// did say (often its etcd members only: the control planes).
	Unread string
	// Recorded are the nodes whose VM the stack's last state holds, with
	// their address: read when Unread is set, nil when not read.
	Recorded map[string]string
	// RecordedUnread says why the stack's state could not be read either.
	RecordedUnread string
}

// known is whether name existed before this run (a node the cluster or
// the stack's state knows).
func (m *Membership) known(name string) bool {
	return m.address(name) != ""
}

// address is the address the cluster knows name by, else the one its VM
// had in the stack's state; "" when neither knows it.
func (m *Membership) address(name string) string {
	if a := m.Members[name]; a != "" {
		return a
	}
	return m.Recorded[name]
}

// noteMembership warns, when the cluster's members could not be read in
// full, how the planned nodes without a VM were classified, and lists in
// Plan.Unchecked those nothing could be checked for. Nothing is said when
// every planned node has a VM: then the members decide nothing.
func (b *builder) noteMembership() {
	m := &b.facts.Membership
	if m.Unread == "" {
		return
	}
	var fromState, added, unchecked []string
	for i := range b.plan.Nodes {
		n := &b.plan.Nodes[i]
		switch {
		case n.Existing:
		case m.Members[n.Name] != "":
			// The cluster's partial answer knew it.
		case m.Recorded[n.Name] != "":
			fromState = append(fromState, n.Name)
		case m.Recorded == nil:
			unchecked = append(unchecked, n.Name)
		default:
			added = append(added, n.Name)
		}
	}
	if len(fromState)+len(added)+len(unchecked) == 0 {
		return
	}
	if len(unchecked) > 0 {
		b.plan.Unchecked = unchecked
		b.warn("the cluster's members could not be read (%s), nor the stack's state (%s): whether %s had a VM that was "+
			"deleted outside Pulumi is not checked, so %s planned as new; run pulumi preview again once the control planes answer",
			m.Unread, m.RecordedUnread, strings.Join(unchecked, ", "), map[bool]string{true: "it is", false: "they are"}[len(unchecked) == 1])
		return
	}
	var parts []string
	if len(fromState) > 0 {
		parts = append(parts, fmt.Sprintf("%s had one (created again)", strings.Join(fromState, ", ")))
	}
	if len(added) > 0 {
		parts = append(parts, fmt.Sprintf("%s never had one (added)", strings.Join(added, ", ")))
	}
	b.warn("the cluster's members could not be read (%s): whether a node without a VM had one is taken from the stack's state "+
		"instead: %s", m.Unread, strings.Join(parts, "; "))
}
