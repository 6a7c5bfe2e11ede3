package plan

import (
	"slices"
	"strings"
	"testing"
)

// settledPlan is a 3+4 cluster that exists and runs, settled as named.
func settledPlan(t *testing.T, settled []string, stagesSettled bool) (*Plan, *Plan) {
	t.Helper()
	spec := baseSpec()
	spec.WorkerPools[0].Count = 4
	fresh := mustCompute(t, spec, roomy(), nil)
	p := mustCompute(t, spec, roomy(), observed(t, fresh, map[string]string{}))
	set := map[string]bool{}
	for _, n := range settled {
		set[n] = true
	}
	p.Settle(set, stagesSettled)
	return p, fresh
}

// A settled node waits as in its cluster's create, and behind the last
// change before it; the nodes that change each wait, VM and apply, for the
// last one before them that changes, even past settled nodes, so that they
// still change one at a time in rollout order; no step waits on itself.
func TestSettleKeepsChangesInOrder(t *testing.T) {
	t.Parallel()
	p, fresh := settledPlan(t, []string{"lab-cp-1", "lab-cp-3", "lab-workers-1", "lab-workers-3"}, false)
	for name, after := range map[string]string{"lab-cp-1": "", "lab-cp-3": "", "lab-workers-1": "lab-cp-2", "lab-workers-3": "lab-workers-2"} {
		want := node(t, fresh, name).Waits
		want.WithCluster, want.AsCreated, want.After = false, true, after
		if strings.Contains(name, "workers") {
			want.VM = after
		}
		if got := node(t, p, name).Waits; got != want {
			t.Errorf("settled %s waits %+v, want its create's behind the last change %+v", name, got, want)
		}
	}
	g := graphOf(p)
	changing := []string{"lab-cp-2", "lab-workers-2", "lab-workers-4"}
	for i, name := range changing[1:] {
		before := "apply:" + changing[i]
		for _, step := range []string{"vm:" + name, "apply:" + name} {
			if !slices.Contains(g.waitsOn(step), before) {
				t.Errorf("%s does not wait for %s: %v", step, before, g.waitsOn(step))
			}
		}
		if !node(t, p, name).Waits.AfterStages {
			t.Errorf("changing %s does not wait for the component stages (a control plane changes)", name)
		}
	}
	for step := range g.deps {
		if slices.Contains(g.waitsOn(step), step) {
			t.Errorf("%s waits on itself", step)
		}
	}
	if len(p.StageRequires) == 0 {
		t.Error("a control plane changes, and the stages require no node")
	}
}

// With every control plane settled, the stages take their create shape
// (each on its VM, no gate) and no apply waits for them: a changing
// worker's VM waits for the applies, which must not wait for a stage that
// waits for a VM.
func TestSettledControlPlanesSettleTheStages(t *testing.T) {
	t.Parallel()
	p, _ := settledPlan(t, []string{"lab-cp-1", "lab-cp-2", "lab-cp-3", "lab-workers-1", "lab-workers-3"}, true)
	if len(p.StageRequires) != 0 {
		t.Errorf("settled stages require %v", p.StageRequires)
	}
	for _, n := range p.Nodes {
		if n.Waits.AfterStages || n.Role == RoleControlPlane && !n.Waits.StageOnVM {
			t.Errorf("%s waits %+v", n.Name, n.Waits)
		}
	}
	if w := node(t, p, "lab-workers-4").Waits; w.After != "lab-workers-2" || w.VM != "lab-workers-2" {
		t.Errorf("lab-workers-4 waits %+v, want behind lab-workers-2, the last change before it", w)
	}
	if w := node(t, p, "lab-workers-2").Waits; w.After != "" || w.VM != "lab-workers-1" {
		t.Errorf("lab-workers-2, the first change, waits %+v", w)
	}
}

// A settled node between changing ones (a resumed rollout: its apply state
// unverified, say, so that its step runs after all) runs after the change
// before it, VM and apply (review s13 item 3), and the graph has no cycle.
func TestSettledNodeWaitsForTheChangeBeforeIt(t *testing.T) {
	t.Parallel()
	for _, stagesSettled := range []bool{false, true} {
		settled := []string{"lab-workers-2", "lab-workers-4"}
		if stagesSettled {
			settled = append(settled, "lab-cp-1", "lab-cp-2", "lab-cp-3")
		}
		p, _ := settledPlan(t, settled, stagesSettled)
		g := graphOf(p)
		for _, step := range []string{"vm:lab-workers-2", "apply:lab-workers-2"} {
			if !slices.Contains(g.waitsOn(step), "apply:lab-workers-1") {
				t.Errorf("stages settled %v: %s does not wait for apply:lab-workers-1: %v", stagesSettled, step, g.waitsOn(step))
			}
		}
		if !slices.Contains(g.waitsOn("apply:lab-workers-4"), "apply:lab-workers-3") {
			t.Errorf("stages settled %v: apply:lab-workers-4 does not wait for apply:lab-workers-3", stagesSettled)
		}
		if !slices.Contains(g.waitsOn("apply:lab-workers-3"), "apply:lab-workers-1") {
			t.Errorf("stages settled %v: the changes past settled lab-workers-2 are not in order", stagesSettled)
		}
		for step := range g.deps {
			if slices.Contains(g.waitsOn(step), step) {
				t.Errorf("stages settled %v: %s waits on itself", stagesSettled, step)
			}
		}
	}
}

// Nothing settled (no map, or every node false): the rollout's waits of
// an existing cluster, written out: each node's VM and apply behind the
// previous node's apply, every apply behind the component stages and, but
// the first, the bootstrap; the stages require every node.
func TestSettleNothingKeepsTheRollout(t *testing.T) {
	t.Parallel()
	want := map[string]Waits{
		"lab-cp-1":      {StageOnVM: true, AfterStages: true},
		"lab-cp-2":      {VM: "lab-cp-1", Apply: "lab-cp-1", AfterStages: true, AfterBootstrap: true},
		"lab-cp-3":      {VM: "lab-cp-2", Apply: "lab-cp-2", AfterStages: true, AfterBootstrap: true},
		"lab-workers-1": {VM: "lab-cp-3", Apply: "lab-cp-3", AfterStages: true, AfterBootstrap: true},
		"lab-workers-2": {VM: "lab-workers-1", Apply: "lab-workers-1", AfterStages: true, AfterBootstrap: true},
		"lab-workers-3": {VM: "lab-workers-2", Apply: "lab-workers-2", AfterStages: true, AfterBootstrap: true},
		"lab-workers-4": {VM: "lab-workers-3", Apply: "lab-workers-3", AfterStages: true, AfterBootstrap: true},
	}
	p, _ := settledPlan(t, nil, false)
	q, _ := settledPlan(t, nil, false)
	none := map[string]bool{}
	for name := range want {
		none[name] = false
	}
	q.Settle(none, false)
	for i, plan := range []*Plan{p, q} {
		for _, n := range plan.Nodes {
			if n.Waits != want[n.Name] {
				t.Errorf("settled %v: %s waits %+v, want %+v", []string{"nil", "none"}[i], n.Name, n.Waits, want[n.Name])
			}
		}
		if len(plan.Nodes) != len(want) || len(plan.StageRequires) != len(want) {
			t.Errorf("settled %v: %d nodes, the stages require %v", []string{"nil", "none"}[i], len(plan.Nodes), plan.StageRequires)
		}
	}
}
