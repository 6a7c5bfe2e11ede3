package plan

import (
	"fmt"
	"slices"
	"strings"
)

// EnvAddUnchecked names the nodes an update adds as new although nothing
// could say whether they had a VM that was deleted outside Pulumi
// (Plan.Unchecked): comma-separated node names, read from the provider's
// environment by the TalosCluster component (Membership.AddAnyway).
const EnvAddUnchecked = "PROXMOXTALOS_ADD_UNCHECKED_NODES"

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
	// Recorded are the nodes the stack's last state holds, by their VM or,
	// when a refresh has removed a VM deleted outside Pulumi, by their
	// ConfigurationApply, with their address: read when Unread is set, nil
	// when not read.
	Recorded map[string]string
	// RecordedUnread says why the stack's state could not be read either.
	RecordedUnread string
	// AddAnyway are the nodes the user said to add as new although neither
	// source could be read (EnvAddUnchecked), read in every run so that a
	// run where it has no effect says so; an update refuses to add the
	// other unchecked ones (Plan.UncheckedRefusal).
	AddAnyway []string
}

// known is whether name existed before this run (a node the cluster or
// the stack's state knows).
func (m *Membership) known(name string) bool {
	return m.address(name) != ""
}

// address is the address the cluster knows name by, else the one the
// stack's state has for it; "" when neither knows it.
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
		b.noteAddAnywayUnused()
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
	if len(unchecked) > 0 {
		b.noteUnchecked(unchecked)
		return
	}
	b.noteAddAnywayUnused()
	if len(fromState)+len(added) == 0 {
		return
	}
	var parts []string
	if len(fromState) > 0 {
		parts = append(parts, fmt.Sprintf("%s had one (created again)", strings.Join(fromState, ", ")))
	}
	if len(added) > 0 {
		parts = append(parts, fmt.Sprintf("%s not in the stack's state (added)", strings.Join(added, ", ")))
	}
	b.warn("the cluster's members could not be read (%s): whether a node without a VM had one is taken from the stack's state "+
		"instead: %s", m.Unread, strings.Join(parts, "; "))
}

// noteUnchecked records the nodes planned as new without a check for a VM
// deleted outside Pulumi, and warns which of them an update refuses to add
// and which it adds as the user said (EnvAddUnchecked).
func (b *builder) noteUnchecked(unchecked []string) {
	m := &b.facts.Membership
	p := &b.plan
	p.Unchecked = unchecked
	p.uncheckedWhy = fmt.Sprintf("the cluster's members could not be read (%s), nor the stack's state (%s)", m.Unread, m.RecordedUnread)
	var refused, anyway []string
	for _, name := range unchecked {
		if slices.Contains(m.AddAnyway, name) {
			anyway = append(anyway, name)
		} else {
			refused = append(refused, name)
		}
	}
	p.uncheckedRefused = refused
	w := fmt.Sprintf("%s: whether %s had a VM that was deleted outside Pulumi is not checked, so %s planned as new",
		p.uncheckedWhy, strings.Join(unchecked, ", "), oneOrMany(len(unchecked), "it is", "they are"))
	if len(refused) > 0 {
		w += fmt.Sprintf("; pulumi up refuses to add %s until the control planes answer: run pulumi preview again then",
			strings.Join(refused, ", "))
	}
	if len(anyway) > 0 {
		w += fmt.Sprintf("; %s %s added as new all the same, as %s says", strings.Join(anyway, ", "),
			oneOrMany(len(anyway), "is", "are"), EnvAddUnchecked)
	}
	p.uncheckedStray = strayAddAnyway(m.AddAnyway, unchecked)
	if p.uncheckedStray != "" {
		w += "; " + p.uncheckedStray
	}
	b.warn("%s", w)
}

// noteAddAnywayUnused warns that EnvAddUnchecked lists nodes in a run that
// plans no node as new unchecked: the variable changes nothing then, and a
// user who set it (for this run, or left over from an earlier one) must not
// believe it did, nor keep it for a later run it was not meant for.
func (b *builder) noteAddAnywayUnused() {
	var names []string
	for _, name := range b.facts.Membership.AddAnyway {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return
	}
	b.warn("%s names %s, but this run plans no node as new without a check for a VM deleted outside Pulumi (that happens only "+
		"when neither the cluster's members nor the stack's state can be read), so it has no effect; unset it",
		EnvAddUnchecked, strings.Join(names, ", "))
}

// strayAddAnyway says which names listed (EnvAddUnchecked) are not among
// the unchecked nodes, and which those are, so that a misspelt name does
// not go unnoticed: otherwise the update refuses again with the same text
// and no sign that the variable was read. "" when every name is one.
func strayAddAnyway(listed, unchecked []string) string {
	var stray []string
	for _, name := range listed {
		if !slices.Contains(unchecked, name) && !slices.Contains(stray, name) {
			stray = append(stray, name)
		}
	}
	if len(stray) == 0 {
		return ""
	}
	return fmt.Sprintf("%s names %s, which %s not among the unchecked nodes (%s) and %s ignored",
		EnvAddUnchecked, strings.Join(stray, ", "), oneOrMany(len(stray), "is", "are"),
		strings.Join(unchecked, ", "), oneOrMany(len(stray), "is", "are"))
}

// oneOrMany is one for n == 1, else many.
func oneOrMany(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// UncheckedRefusal is the error that stops an update before it changes
// anything while planned nodes without a VM could not be checked for one
// deleted outside Pulumi (Unchecked, less those EnvAddUnchecked names):
// adding such a node as new would leave its old Kubernetes Node object
// and, for a control plane, its etcd member beside the new one, counted
// nowhere. nil when there are none. When EnvAddUnchecked lists names
// that are not unchecked nodes, it says which.
func (p *Plan) UncheckedRefusal() error {
	if len(p.uncheckedRefused) == 0 {
		return nil
	}
	var named []string
	cps := false
	for _, name := range p.uncheckedRefused {
		if i := slices.IndexFunc(p.Nodes, func(n Node) bool { return n.Name == name }); i >= 0 && p.Nodes[i].Role == RoleControlPlane {
			named, cps = append(named, name+" (control plane)"), true
		} else {
			named = append(named, name)
		}
	}
	old := "Kubernetes Node object"
	if cps {
		old += " (and, for a control plane, its etcd member)"
	}
	stray := ""
	if p.uncheckedStray != "" {
		stray = " " + p.uncheckedStray + "."
	}
	return fmt.Errorf("cannot add %s: %s, so whether %s had a VM that was deleted outside Pulumi cannot be told, and adding "+
		"a node whose VM was deleted would leave its old %s beside the new one; nothing was changed. Run pulumi up again "+
		"once the control planes answer (pulumi preview says whether they do).%s If %s new, add %s deliberately: %s=%s pulumi up",
		strings.Join(named, ", "), p.uncheckedWhy, oneOrMany(len(named), "it", "they"), old, stray,
		oneOrMany(len(named), "you know it is", "you know they are"), oneOrMany(len(named), "it", "them"),
		EnvAddUnchecked, strings.Join(p.uncheckedRefused, ","))
}
