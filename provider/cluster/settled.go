package cluster

import (
	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
)

// settledNodes are the nodes this update leaves as they are, for
// plan.Settle: an existing node whose VM runs, that the plan's summary (its
// view of the VMs) lists as changing in no way, and that answered with the
// very configuration it is given (the same text or digest) and the planned
// Talos and Kubernetes versions. stagesSettled: every control plane is
// settled. Only when the configurations are known now (gen, made with the
// cluster's own secrets before anything is registered) and every input is:
// otherwise no node is settled, and the update keeps the rollout's waits
// everywhere. Conservative on purpose: a node wrongly settled would change
// outside the rollout's order; one wrongly not settled only costs the CLI a
// state write.
func settledNodes(p *plan.Plan, base plan.Summary, gen *generated, readings map[string]nodeReading, allKnown bool) (settled map[string]bool, stagesSettled bool) {
	if gen == nil || !allKnown || len(p.Removed) > 0 || base.KubernetesUpgrade != "" || base.TalosUpgrade != "" {
		return nil, false
	}
	changing := map[string]bool{}
	for _, c := range base.Nodes {
		changing[c.Name] = true
	}
	for _, l := range [][]string{base.Started, base.Resumed, base.Unknown} {
		for _, name := range l {
			changing[name] = true
		}
	}
	settled = map[string]bool{}
	for i := range p.Nodes {
		n := &p.Nodes[i]
		r, ok := readings[n.Name]
		if !n.Existing || n.Power != plan.PowerRunning || changing[n.Name] || !ok || r.err != nil {
			continue
		}
		if sameConfig(r.running.Config, gen.configs[n.Name]) &&
			r.running.TalosVersion != "" && sameVersion(r.running.TalosVersion, p.Cluster.TalosVersion) &&
			sameVersion(kubeletVersion(r.running.Config), p.Cluster.KubernetesVersion) {
			settled[n.Name] = true
		}
	}
	stagesSettled = true
	for i := range p.Nodes {
		if n := &p.Nodes[i]; n.Role == plan.RoleControlPlane && !settled[n.Name] {
			stagesSettled = false
		}
	}
	return settled, stagesSettled
}

// sameConfig: the node runs the configuration next, the same text or the
// same digest (configEffect's first answers, without classifying a change).
func sameConfig(running, next string) bool {
	if running == "" || next == "" {
		return false
	}
	if running == next {
		return true
	}
	d1, err1 := talosapi.ConfigDigest([]byte(running))
	d2, err2 := talosapi.ConfigDigest([]byte(next))
	return err1 == nil && err2 == nil && d1 == d2
}
