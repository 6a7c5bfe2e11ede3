package plan

import (
	"fmt"
	"slices"
	"strings"
)

// NoNodeChanges is the summary of an update that changes no node.
const NoNodeChanges = "no node changes"

// String is the ten-second summary: what happens to which nodes, most
// disruptive last, e.g. "1 added: c-workers-3; all 5 nodes upgraded one at
// a time, control planes first (Talos v1.12.4 → v1.12.5)".
func (s Summary) String() string {
	var parts []string
	if len(s.Unknown) > 0 {
		parts = append(parts, fmt.Sprintf("%d unknown (Proxmox node offline or not answering, not checked): %s", len(s.Unknown), nameList(s.Unknown)))
	}
	if len(s.Started) > 0 {
		parts = append(parts, fmt.Sprintf("%d started first (VM stopped): %s", len(s.Started), nameList(s.Started)))
	}
	if len(s.Resumed) > 0 {
		parts = append(parts, fmt.Sprintf("%d resumed first (VM paused): %s", len(s.Resumed), nameList(s.Resumed)))
	}
	if s.Quorum != "" {
		parts = append(parts, s.Quorum)
	}
	for _, a := range []Action{ActionRecreate, ActionAdd, ActionRemove, ActionReplace, ActionUpgrade, ActionReboot, ActionUpdate} {
		if p := s.part(a); p != "" {
			parts = append(parts, p)
		}
	}
	if s.Bringup != "" {
		parts = append(parts, s.Bringup)
	}
	if s.KubernetesUpgrade != "" {
		parts = append(parts, "Kubernetes "+s.KubernetesUpgrade+", control plane components first, then kubelets node by node")
	}
	if len(parts) == 0 {
		return NoNodeChanges
	}
	return strings.Join(parts, "; ")
}

// part says what happens to the nodes with action a, "" for none.
func (s Summary) part(a Action) string {
	var nodes []NodeChange
	for _, c := range s.Nodes {
		if c.Action == a {
			nodes = append(nodes, c)
		}
	}
	if len(nodes) == 0 {
		return ""
	}
	names := make([]string, len(nodes))
	roles := map[Role]bool{}
	var why []string
	for i, c := range nodes {
		names[i] = c.Name
		roles[c.Role] = true
		for _, w := range c.Why {
			if !slices.Contains(why, w) {
				why = append(why, w)
			}
		}
	}
	n := len(nodes)
	// Which nodes: all of them, or by name (added and removed nodes always
	// by name: that is what the update is about).
	who, list := fmt.Sprintf("%d", n), ": "+nameList(names)
	if n == s.Total && n > 1 && a != ActionAdd && a != ActionRemove && a != ActionRecreate {
		who, list = fmt.Sprintf("all %d nodes", n), ""
	}
	oneAtATime := ""
	if n > 1 {
		oneAtATime = " one at a time"
	}
	switch a {
	case ActionAdd:
		if len(why) > 0 {
			return fmt.Sprintf("%s added (%s)%s", who, causes(why), list)
		}
		return fmt.Sprintf("%s added%s", who, list)
	case ActionRecreate:
		return fmt.Sprintf("%s created again (VM deleted outside Pulumi)%s", who, list)
	case ActionRemove:
		// What the graceful reset does before a VM is deleted.
		how := "drained first"
		switch {
		case roles[RoleControlPlane] && roles[RoleWorker]:
			how = "drained, control planes leave etcd first"
		case roles[RoleControlPlane]:
			how = "etcd leave first"
		}
		return fmt.Sprintf("%s removed%s (%s)%s", who, oneAtATime, how, list)
	case ActionReplace:
		return fmt.Sprintf("%s replaced by new VMs%s (%s)%s", who, oneAtATime, causes(why), list)
	case ActionUpgrade:
		what := "new installer image"
		if s.TalosUpgrade != "" {
			what = "Talos " + s.TalosUpgrade
		}
		order := ""
		if roles[RoleControlPlane] && roles[RoleWorker] {
			order = ", control planes first"
		}
		return fmt.Sprintf("%s upgraded%s%s (%s; VMs kept)%s", who, oneAtATime, order, what, list)
	case ActionReboot:
		return fmt.Sprintf("%s rebooted%s (%s)%s", who, oneAtATime, causes(why), list)
	default:
		return fmt.Sprintf("%s updated live, no reboot%s%s", who, vmChanges(nodes), list)
	}
}

// vmChanges says what changes on the nodes' running VMs, " (tags +prod)",
// and how disk moves roll out; "" when their VMs do not change.
func vmChanges(nodes []NodeChange) string {
	var why, unchecked []string
	moved, grown, changed, gated := false, false, false, 0
	for _, c := range nodes {
		moved = moved || c.Moved
		grown = grown || c.Grown
		changed = changed || c.DisksChanged
		if c.Moved || c.Grown || c.DisksChanged {
			gated++
		}
		if c.Unchecked {
			unchecked = append(unchecked, c.Name)
		}
		for _, r := range c.VM {
			if !slices.Contains(why, r) {
				why = append(why, r)
			}
		}
	}
	if len(why) == 0 {
		return ""
	}
	s := " (" + causes(why)
	if moved || grown || changed {
		// One word when the disks only move or only grow.
		how := "changed"
		switch {
		case moved && !grown && !changed:
			how = "moved"
		case grown && !moved && !changed:
			how = "grown"
		}
		s += "; disks " + how + " one node at a time, "
		switch {
		case len(unchecked) == gated:
			s += "with no health check in between (stored health gates older than the provider; see the warning)"
		case len(unchecked) > 0:
			s += "cluster health checked after each except " + nameList(unchecked) + " (stored health gate older than the provider; see the warning)"
		default:
			s += "cluster health checked after each"
		}
	}
	return s + ")"
}

// causes lists up to two distinct reasons.
func causes(why []string) string {
	if len(why) <= 2 {
		return strings.Join(why, "; ")
	}
	return fmt.Sprintf("%s; +%d more", strings.Join(why[:2], "; "), len(why)-2)
}

// maxNames is how many node names a part of the summary lists at most.
const maxNames = 4

// nameList joins names, the first few only when there are more than
// maxNames: a summary stays one readable line for a large pool.
func nameList(names []string) string {
	if len(names) <= maxNames {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s, +%d more", strings.Join(names[:maxNames-1], ", "), len(names)-maxNames+1)
}

// Description says what the cluster is once the plan is applied, e.g. "5
// nodes (3 control planes, 2 workers), Talos v1.12.5, Kubernetes v1.35.2".
// It depends on the plan only, so a preview that changes nothing computes
// the same text an update stored.
func (p *Plan) Description() string {
	cps := 0
	for _, n := range p.Nodes {
		if n.Role == RoleControlPlane {
			cps++
		}
	}
	workers := len(p.Nodes) - cps
	return fmt.Sprintf("%s (%s, %s), Talos %s, Kubernetes %s", count(len(p.Nodes), "node"),
		count(cps, "control plane"), count(workers, "worker"), p.Cluster.TalosVersion, p.Cluster.KubernetesVersion)
}

func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
