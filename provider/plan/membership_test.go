package plan

import (
	"slices"
	"strings"
	"testing"
)

// A node whose VM was deleted outside Pulumi is created again where it
// was, never added as a new node, also when the cluster could not say in
// full which nodes it knows (issue 12's flake: the members read timed out
// behind a paused control plane and the preview said "1 added"): the
// stack's state, which still holds its VM, decides instead, and the
// preview says that the members were not read. Only when neither can be
// read is the node planned as new, and then the summary says it was not
// checked.
func TestMissingVMWhenMembersUnread(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	spec.WorkerPools[0].Count = 3 // lab-workers-3 is really new
	created := mustCompute(t, baseSpec(), roomy(), nil)
	prev := observed(t, created, map[string]string{"lab-cp-2": "paused"})
	was := addresses(created)
	prev.Nodes = slices.DeleteFunc(prev.Nodes, func(n NodeState) bool { return n.Name == "lab-workers-1" })
	// What a partial answer holds: the etcd members (control planes), the
	// paused lab-cp-2 among them.
	etcdOnly := map[string]string{"lab-cp-1": was["lab-cp-1"], "lab-cp-2": was["lab-cp-2"], "lab-cp-3": was["lab-cp-3"]}
	recorded := map[string]string{}
	for name, a := range was {
		recorded[name] = a
	}
	const why = "lab-cp-1, lab-cp-3 were asked twice within 10s: context deadline exceeded"

	summary := func(p *Plan) string {
		s := Compare(prev, p.State())
		p.MarkPower(&s)
		return s.String()
	}
	withMembership := func(m Membership) *Plan {
		f := roomy()
		f.Membership = m
		return mustCompute(t, spec, f, prev)
	}

	// The stack's state holds lab-workers-1's VM: created again at its
	// address, though the cluster's partial answer does not name it.
	p := withMembership(Membership{Members: etcdOnly, Unread: why, Recorded: recorded})
	w1 := node(t, p, "lab-workers-1")
	if w1.Power != PowerMissing || addressOnly(w1.VM.NICs[0].Address) != was["lab-workers-1"] {
		t.Errorf("lab-workers-1: power %q at %s, want missing at %s", w1.Power, w1.VM.NICs[0].Address, was["lab-workers-1"])
	}
	if w3 := node(t, p, "lab-workers-3"); w3.Power != PowerNone {
		t.Errorf("the new lab-workers-3 is %q", w3.Power)
	}
	want := "1 resumed first (VM paused): lab-cp-2; etcd: 2 of 3 control planes running (lab-cp-2 not), quorum kept; " +
		"1 created again (VM deleted outside Pulumi): lab-workers-1; 1 added: lab-workers-3"
	if got := summary(p); got != want {
		t.Errorf("summary\n%s\nwant\n%s", got, want)
	}
	wantContains(t, strings.Join(p.PowerNotes(), "\n"),
		"lab-workers-1: VM missing (deleted outside Pulumi), will be created again at "+was["lab-workers-1"]+" and rejoin the cluster")
	wantContains(t, strings.Join(p.Warnings, "\n"), "the cluster's members could not be read ("+why+"): whether a node without a VM had one "+
		"is taken from the stack's state instead: lab-workers-1 had one (created again); lab-workers-3 never had one (added)")
	if len(p.Unchecked) > 0 {
		t.Errorf("unchecked %v with the stack's state read", p.Unchecked)
	}

	// Neither the members nor the state: planned as new, and said so.
	p = withMembership(Membership{Members: etcdOnly, Unread: why, RecordedUnread: "the engine did not answer"})
	want = "1 resumed first (VM paused): lab-cp-2; etcd: 2 of 3 control planes running (lab-cp-2 not), quorum kept; " +
		"2 added (not checked for a VM deleted outside Pulumi): lab-workers-1, lab-workers-3"
	if got := summary(p); got != want {
		t.Errorf("summary without members nor state\n%s\nwant\n%s", got, want)
	}
	wantContains(t, strings.Join(p.Warnings, "\n"), "the cluster's members could not be read ("+why+"), nor the stack's state "+
		"(the engine did not answer): whether lab-workers-1, lab-workers-3 had a VM that was deleted outside Pulumi is not checked, "+
		"so they are planned as new; run pulumi preview again once the control planes answer")

	// The members read in full: they decide, and nothing is said of them.
	all := map[string]string{"lab-workers-1": was["lab-workers-1"]}
	for k, v := range etcdOnly {
		all[k] = v
	}
	p = withMembership(Membership{Members: all})
	if w1 := node(t, p, "lab-workers-1"); w1.Power != PowerMissing {
		t.Errorf("lab-workers-1 known to the cluster: %q", w1.Power)
	}
	for _, w := range p.Warnings {
		if strings.Contains(w, "members") {
			t.Errorf("a warning about the members when they were read: %s", w)
		}
	}

	// Every planned node has a VM: the members decide nothing, so a failed
	// read is not worth a warning.
	p = mustCompute(t, baseSpec(), func() Facts { f := roomy(); f.Membership = Membership{Unread: why}; return f }(),
		observed(t, created, nil))
	for _, w := range p.Warnings {
		if strings.Contains(w, "members") {
			t.Errorf("a warning about the members with every VM there: %s", w)
		}
	}
}
