package plan

// Settle registers the nodes an update leaves as they are (settled: the
// component found that the engine runs no step of theirs that touches the
// node or its VM, cluster.settledNodes) as the cluster's create registered
// them, and orders the others as before, each behind the last node before
// it that changes.
//
// Why: the Pulumi CLI writes the whole state after every step whose
// registration differs from the state (checked inputs, sorted dependencies:
// pulumi pkg v3.274.1 backend/snapshot.go sameSnapshotMutation.mustWrite),
// even in a preview, and each write costs the size of the state (issue 14).
// A new cluster's nodes come up together (WithCluster: no rollout waits), so
// the state a create leaves has that shape; a day-two registration in the
// rollout's shape made every step of the first no-op preview after a create
// write. The rollout's waits order steps that run; a settled node's steps do
// not run (Same), so they need none, and the changing nodes still go one at
// a time: each waits (Waits.After) for the last changing node before it,
// even past settled nodes, whose Same steps order nothing. A settled node's
// apply (and a settled worker's VM) waits for that node too: should a step
// of it run after all, it runs after the changes before it in the rollout.
//
// stagesSettled: every control plane is settled and Kubernetes does not
// move, so the component stages do nothing either: they take their create
// shape (no gate, each on its own VM) and no apply waits for them (an apply
// that waited for them while a stage waited for a VM that waits for an
// apply would be a cycle).
func (p *Plan) Settle(settled map[string]bool, stagesSettled bool) {
	if len(settled) == 0 {
		return // every node changes: the rollout's waits as they are
	}
	byName := map[string]*Node{}
	for i := range p.Nodes {
		byName[p.Nodes[i].Name] = &p.Nodes[i]
	}
	prev, lastCP, lastChanged := "", "", ""
	for _, name := range p.Rollout {
		n := byName[name]
		switch {
		case settled[name] && n.Existing:
			// the waits buildWaits gives a new cluster's node, and behind
			// the last change before it: its steps, which should not run,
			// run after the changes before them if they do. Not a control
			// plane's VM: its stage waits for it (StageOnVM), and a
			// changing node's apply for the stages.
			w := Waits{Apply: prev, AsCreated: true, StageOnVM: n.Role == RoleControlPlane, After: lastChanged}
			if n.Role == RoleWorker {
				w.Apply, w.VM, w.AfterControlPlaneVMs = lastCP, lastChanged, true
			}
			if w.After == w.Apply {
				w.After = ""
			}
			n.Waits = w
		case n.Existing || n.Role == RoleControlPlane:
			// behind the last change, not (only) behind a settled node
			if lastChanged != "" && lastChanged != prev {
				n.Waits.After = lastChanged
				if n.Waits.VM != "" {
					n.Waits.VM = lastChanged
				}
			}
			lastChanged = name
		}
		// new workers are configured in parallel once the control planes
		// are, as before
		if stagesSettled {
			n.Waits.AfterStages = false
		}
		prev = name
		if n.Role == RoleControlPlane {
			lastCP = name
		}
	}
	if stagesSettled {
		p.StageRequires = []string{}
	}
}
