package plan

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// observed is the state of p's cluster as the component rebuilds it from
// Proxmox, with the VM status of the named nodes set (others run).
func observed(t *testing.T, p *Plan, status map[string]string) *State {
	t.Helper()
	vms := observe(p, 100)
	for i := range vms {
		if s, ok := status[vms[i].Name]; ok {
			vms[i].Status = s
		}
	}
	st, warnings := Rebuild(p.Cluster.Name, vms)
	if len(warnings) > 0 {
		t.Fatalf("rebuild: %v", warnings)
	}
	return st
}

// stepGraph is a plan's steps as the component wires them: what each
// waits for, and which nodes each one needs.
type stepGraph struct {
	deps map[string][]string
	// requires: the nodes a step's health gate requires healthy.
	requires map[string][]string
	// answers: the node a step talks to (it must answer).
	answers map[string]string
}

func graphOf(p *Plan) stepGraph {
	g := stepGraph{deps: map[string][]string{}, requires: map[string][]string{}, answers: map[string]string{}}
	lastStage, prevStage := "", ""
	for _, name := range p.Rollout {
		n := nodeOf(p, name)
		if n.Role != RoleControlPlane {
			continue
		}
		s := "stage:" + name
		if prevStage != "" {
			g.deps[s] = append(g.deps[s], prevStage)
		}
		if n.Waits.StageOnVM {
			g.deps[s] = append(g.deps[s], "vm:"+name)
		}
		g.requires[s] = p.StageRequires
		g.answers[s] = name // it reads what its node runs
		prevStage, lastStage = s, s
	}
	for i, name := range p.Rollout {
		n := nodeOf(p, name)
		vm, apply := "vm:"+name, "apply:"+name
		if n.Waits.VM != "" {
			g.deps[vm] = append(g.deps[vm], "apply:"+n.Waits.VM)
		}
		g.deps[apply] = append(g.deps[apply], vm)
		g.answers[apply] = name
		if n.Waits.Apply != "" {
			g.deps[apply] = append(g.deps[apply], "apply:"+n.Waits.Apply)
		}
		if n.Waits.After != "" {
			g.deps[apply] = append(g.deps[apply], "apply:"+n.Waits.After)
		}
		if lastStage != "" && n.Waits.AfterStages {
			g.deps[apply] = append(g.deps[apply], lastStage)
		}
		// An apply's gate requires the nodes up to it (other new workers
		// excepted, as the component's gateProps does).
		for _, other := range p.Rollout[:i+1] {
			o := nodeOf(p, other)
			if other != name && n.Role == RoleWorker && o.Role == RoleWorker && (n.Waits.AsCreated || !n.Existing && !o.Existing) {
				continue
			}
			g.requires[apply] = append(g.requires[apply], other)
		}
	}
	return g
}

func nodeOf(p *Plan, name string) *Node {
	for i := range p.Nodes {
		if p.Nodes[i].Name == name {
			return &p.Nodes[i]
		}
	}
	return nil
}

// waitsOn lists every step the step waits for, transitively.
func (g stepGraph) waitsOn(step string) []string {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(s string) {
		for _, d := range g.deps[s] {
			if !seen[d] {
				seen[d] = true
				walk(d)
			}
		}
	}
	walk(step)
	var out []string
	for s := range seen {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// TestNoWaitDependsOnItself: in every scenario, the VM step of a node whose
// VM must start or restart never waits on a step whose health check
// requires that node, and no step waits on itself.
func TestNoWaitDependsOnItself(t *testing.T) {
	t.Parallel()
	created := mustCompute(t, baseSpec(), roomy(), nil)
	moreCores := baseSpec()
	moreCores.WorkerPools[0].Size.Cores = ptr(4)
	moreCores.ControlPlane.Size.Cores = ptr(4)
	upgrade := baseSpec()
	upgrade.KubernetesVersion = "v1.35.3"
	scaled := baseSpec()
	scaled.WorkerPools[0].Count = 4

	for _, tc := range []struct {
		name   string
		spec   Spec
		status map[string]string
		silent []string
	}{
		{name: "new cluster", spec: baseSpec()},
		{name: "unchanged", spec: baseSpec(), status: map[string]string{}},
		{name: "a control plane stopped", spec: baseSpec(), status: map[string]string{"lab-cp-2": "stopped"}},
		{name: "quorum lost and a worker stopped", spec: upgrade, status: map[string]string{"lab-cp-2": "stopped", "lab-cp-3": "stopped", "lab-workers-1": "stopped"}},
		{name: "VM restarts with a Kubernetes upgrade", spec: moreCores, status: map[string]string{"lab-cp-1": "stopped"}},
		{name: "a node in maintenance mode", spec: upgrade, status: map[string]string{}, silent: []string{"lab-cp-3"}},
		{name: "scale out with a worker stopped", spec: scaled, status: map[string]string{"lab-workers-2": "paused"}},
		{name: "host offline", spec: baseSpec(), status: map[string]string{"lab-cp-2": "unknown"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var prev *State
			if tc.status != nil {
				prev = observed(t, created, tc.status)
			}
			f := roomy()
			if tc.silent != nil {
				f.Silent = map[string]bool{}
				for _, n := range tc.silent {
					f.Silent[n] = true
				}
			}
			p := mustCompute(t, tc.spec, f, prev)
			g := graphOf(p)
			for _, name := range p.Rollout {
				n := nodeOf(p, name)
				repaired := n.Existing && n.Power != PowerRunning
				var restarts bool
				if old := prev.node(name); old != nil {
					next := p.nodeState(n)
					restarts = len(restartReasons(old, &next)) > 0
				}
				// A VM that must start waits on nothing that talks to
				// its node; one that must start or restart on no health
				// check that requires its node (it may be unhealthy
				// until its VM step).
				for _, s := range g.waitsOn("vm:" + name) {
					if s == "vm:"+name {
						t.Errorf("%s's VM waits on itself", name)
					}
					if (repaired || !n.Existing) && g.answers[s] == name {
						t.Errorf("%s's VM step waits on %s, which talks to %s (waits %s)", name, s, name, strings.Join(g.waitsOn("vm:"+name), " "))
					}
					if (repaired || restarts || !n.Existing) && slices.Contains(g.requires[s], name) {
						t.Errorf("%s's VM step waits on %s, whose health check requires %s (waits %s)", name, s, name, strings.Join(g.waitsOn("vm:"+name), " "))
					}
				}
				// Nor does its apply, which may be what makes it
				// healthy (a node in maintenance mode, a new one).
				silent := tc.silent != nil && slices.Contains(tc.silent, name)
				for _, s := range g.waitsOn("apply:" + name) {
					if (repaired || restarts || silent || !n.Existing) && slices.Contains(g.requires[s], name) {
						t.Errorf("%s's apply waits on %s, whose health check requires %s", name, s, name)
					}
				}
				for _, s := range []string{"apply:" + name, "stage:" + name} {
					if slices.Contains(g.waitsOn(s), s) {
						t.Errorf("%s waits on itself", s)
					}
				}
			}
		})
	}
}

// TestWaitsOfARepair: a stopped control plane's VM waits for nothing and
// its stage waits for its VM; the running node after it keeps the rolling
// order; the stages require only the nodes that run and answered.
func TestWaitsOfARepair(t *testing.T) {
	t.Parallel()
	created := mustCompute(t, baseSpec(), roomy(), nil)
	f := roomy()
	f.Silent = map[string]bool{"lab-workers-2": true}
	p := mustCompute(t, baseSpec(), f, observed(t, created, map[string]string{"lab-cp-2": "stopped"}))

	want := map[string]Waits{
		"lab-cp-1":      {StageOnVM: true, AfterStages: true},
		"lab-cp-2":      {Apply: "lab-cp-1", StageOnVM: true, AfterStages: true, AfterBootstrap: true},
		"lab-cp-3":      {VM: "lab-cp-2", Apply: "lab-cp-2", AfterStages: true, AfterBootstrap: true},
		"lab-workers-1": {VM: "lab-cp-3", Apply: "lab-cp-3", AfterStages: true, AfterBootstrap: true},
		"lab-workers-2": {VM: "lab-workers-1", Apply: "lab-workers-1", AfterStages: true, AfterBootstrap: true},
	}
	if p.NewCluster {
		t.Error("a cluster with running nodes is planned as a new one")
	}
	for name, w := range want {
		if got := node(t, p, name).Waits; got != w {
			t.Errorf("%s waits %+v, want %+v", name, got, w)
		}
	}
	if !slices.Equal(p.StageRequires, []string{"lab-cp-1", "lab-cp-3", "lab-workers-1"}) {
		t.Errorf("stages require %v", p.StageRequires)
	}

	// A new cluster: every VM waits for nothing; new workers' applies wait
	// for the last control plane only.
	fresh := mustCompute(t, baseSpec(), roomy(), nil)
	for _, n := range fresh.Nodes {
		if n.Waits.VM != "" {
			t.Errorf("new node %s's VM waits for %s", n.Name, n.Waits.VM)
		}
		if n.Role == RoleWorker && n.Waits.Apply != "lab-cp-3" {
			t.Errorf("new worker %s's apply waits for %q", n.Name, n.Waits.Apply)
		}
	}
	if len(fresh.StageRequires) != 0 {
		t.Errorf("a new cluster's stages require %v", fresh.StageRequires)
	}
}

// TestNewClusterComesUpTogether: a cluster no node of which existed is
// created with every node at once (no apply waits for the stages, the
// bootstrap or a health gate, and none waits for its node to install),
// the applies still chained in rollout order for a later destroy; once
// any node exists, even a stopped one, every day-two wait is back, for old
// nodes and new ones alike.
func TestNewClusterComesUpTogether(t *testing.T) {
	t.Parallel()
	fresh := mustCompute(t, baseSpec(), roomy(), nil)
	if !fresh.NewCluster {
		t.Fatal("a cluster without a node is not planned as a new one")
	}
	want := map[string]Waits{
		"lab-cp-1":      {StageOnVM: true, WithCluster: true},
		"lab-cp-2":      {Apply: "lab-cp-1", StageOnVM: true, WithCluster: true},
		"lab-cp-3":      {Apply: "lab-cp-2", StageOnVM: true, WithCluster: true},
		"lab-workers-1": {Apply: "lab-cp-3", WithCluster: true, AfterControlPlaneVMs: true},
		"lab-workers-2": {Apply: "lab-cp-3", WithCluster: true, AfterControlPlaneVMs: true},
	}
	for name, w := range want {
		if got := node(t, fresh, name).Waits; got != w {
			t.Errorf("new cluster: %s waits %+v, want %+v", name, got, w)
		}
	}
	if empty := mustCompute(t, baseSpec(), roomy(), &State{Version: StateVersion}); !empty.NewCluster {
		t.Error("an empty previous state is not a new cluster")
	}

	scaled := baseSpec()
	scaled.WorkerPools[0].Count = 3
	for _, status := range []map[string]string{{}, {"lab-cp-1": "stopped", "lab-cp-2": "stopped", "lab-cp-3": "stopped", "lab-workers-1": "stopped", "lab-workers-2": "stopped"}} {
		p := mustCompute(t, scaled, roomy(), observed(t, fresh, status))
		if p.NewCluster {
			t.Errorf("existing nodes %v: planned as a new cluster", status)
		}
		for _, n := range p.Nodes {
			if n.Waits.WithCluster || !n.Waits.AfterStages || n.Waits.AfterBootstrap != (n.Name != p.Rollout[0]) {
				t.Errorf("existing nodes %v: %s waits %+v", status, n.Name, n.Waits)
			}
		}
		if w := node(t, p, "lab-workers-3").Waits; w.Apply != "lab-cp-3" {
			t.Errorf("a new worker of an existing cluster waits %+v", w)
		}
	}
}

// TestPowerSummary: stopped, paused and unknown VMs appear per node and in the
// summary with etcd's quorum, never as "no node changes".
func TestPowerSummary(t *testing.T) {
	t.Parallel()
	created := mustCompute(t, baseSpec(), roomy(), nil)
	prev := observed(t, created, map[string]string{"lab-cp-2": "stopped", "lab-cp-3": "stopped", "lab-workers-1": "stopped", "lab-workers-2": "unknown"})
	p := mustCompute(t, baseSpec(), roomy(), prev)

	s := Compare(prev, p.State())
	p.MarkPower(&s)
	want := "1 unknown (Proxmox node offline or not answering, not checked): lab-workers-2; 3 started first (VM stopped): lab-cp-2, lab-cp-3, lab-workers-1; " +
		"etcd: 1 of 3 control planes running (lab-cp-2, lab-cp-3 not), quorum lost: the cluster accepts no change until a majority runs"
	if got := s.String(); got != want {
		t.Errorf("summary\n%s\nwant\n%s", got, want)
	}
	notes := strings.Join(p.PowerNotes(), "\n")
	cp2 := node(t, p, "lab-cp-2")
	wantContains(t, notes,
		fmt.Sprintf("lab-cp-2: VM %d on %s stopped, will be started", cp2.VM.VMID, cp2.VM.Host),
		fmt.Sprintf("lab-workers-2: VM %d on %s is unknown (%s is offline or does not answer): not checked", node(t, p, "lab-workers-2").VM.VMID, node(t, p, "lab-workers-2").VM.Host, node(t, p, "lab-workers-2").VM.Host))

	// A paused VM (pvestatd reports its qmpstatus) does not run either:
	// it is resumed, not started.
	paused := observed(t, created, map[string]string{"lab-cp-2": "paused", "lab-workers-1": "suspended"})
	p = mustCompute(t, baseSpec(), roomy(), paused)
	s = Compare(paused, p.State())
	p.MarkPower(&s)
	want = "2 resumed first (VM paused): lab-cp-2, lab-workers-1; etcd: 2 of 3 control planes running (lab-cp-2 not), quorum kept"
	if got := s.String(); got != want {
		t.Errorf("summary with paused VMs\n%s\nwant\n%s", got, want)
	}
	cp2 = node(t, p, "lab-cp-2")
	wantContains(t, strings.Join(p.PowerNotes(), "\n"), fmt.Sprintf("lab-cp-2: VM %d on %s paused, will be resumed", cp2.VM.VMID, cp2.VM.Host))

	one := observed(t, created, map[string]string{"lab-cp-3": "stopped"})
	p = mustCompute(t, baseSpec(), roomy(), one)
	if got := p.Quorum(); got != "etcd: 2 of 3 control planes running (lab-cp-3 not), quorum kept" {
		t.Errorf("quorum %q", got)
	}
	if got := mustCompute(t, baseSpec(), roomy(), observed(t, created, map[string]string{})).Quorum(); got != "" {
		t.Errorf("all running: quorum %q", got)
	}
}
