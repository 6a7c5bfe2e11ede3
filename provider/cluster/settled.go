package cluster

import (
	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
)

// settledNodes are the nodes this update leaves as they are, for
// plan.Settle: an existing node whose VM runs and that answered with a
// configuration, which the summary (the plan's view of the VMs and what
// refine learns from the configurations the nodes run) lists as changing
// in no way. stagesSettled: every control plane is settled and Kubernetes
// does not move. Only when the configurations are known now (gen, made
// with the cluster's own secrets before anything is registered) and every
// input is: otherwise no node is settled, and the update keeps the
// rollout's waits everywhere. Conservative on purpose: a node wrongly
// settled would change outside the rollout's order.
func settledNodes(p *plan.Plan, base plan.Summary, gen *generated, readings map[string]nodeReading, allKnown bool) (settled map[string]bool, stagesSettled bool) {
	if gen == nil || !allKnown || len(p.Removed) > 0 {
		return nil, false
	}
	var existing []*plan.Node
	for i := range p.Nodes {
		if n := &p.Nodes[i]; n.Existing {
			existing = append(existing, n)
		}
	}
	unsure := false
	want := versions{talos: p.Cluster.TalosVersion, kubernetes: p.Cluster.KubernetesVersion}
	s := refine(base, existing, gen.configs, want, readings, func(string) { unsure = true })
	if unsure || s.KubernetesUpgrade != "" || s.TalosUpgrade != "" {
		return nil, false
	}
	changing := map[string]bool{}
	for _, c := range s.Nodes {
		changing[c.Name] = true
	}
	for _, l := range [][]string{s.Started, s.Resumed, s.Unknown} {
		for _, name := range l {
			changing[name] = true
		}
	}
	settled = map[string]bool{}
	stagesSettled = true
	for _, n := range existing {
		r, ok := readings[n.Name]
		if ok && r.err == nil && r.running.Config != "" && n.Power == plan.PowerRunning && !changing[n.Name] {
			settled[n.Name] = true
		}
	}
	for i := range p.Nodes {
		if n := &p.Nodes[i]; n.Role == plan.RoleControlPlane && !settled[n.Name] {
			stagesSettled = false
		}
	}
	return settled, stagesSettled
}
