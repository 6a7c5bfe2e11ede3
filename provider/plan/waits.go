package plan

// Waits says what a node's steps wait for in an update. These are the
// ordering decisions of the rollout; the component only wires them. Two
// rules hold together: changes roll one healthy node at a time, control
// planes first, and no wait depends on itself, so a node's VM step never
// waits on that node (a VM that does not run is repaired by the next update
// without a refresh).
type Waits struct {
	// VM is the node whose configuration apply this node's VM step waits
	// for, "" for none. A running VM's changes (restarts for new hardware)
	// roll behind the previous node of the rollout. A VM that is new,
	// stopped or not known waits for nothing: every later step of its node,
	// and every health check that requires the node, needs it to run.
	VM string
	// Apply is the node whose apply this node's apply waits for: the
	// previous node of the rollout, or for a new worker the last control
	// plane (new workers are configured in parallel); "" for the first.
	Apply string
	// StageOnVM: the control plane's component stage waits for its VM
	// (one that waits for nothing), so that it finds the node booting
	// rather than no one.
	StageOnVM bool
}

// buildWaits decides what each node's steps wait for, and which nodes the
// control plane component stages require to be healthy.
func (b *builder) buildWaits() {
	p := &b.plan
	byName := map[string]*Node{}
	for i := range p.Nodes {
		byName[p.Nodes[i].Name] = &p.Nodes[i]
	}
	prev, lastCP := "", ""
	for _, name := range p.Rollout {
		n := byName[name]
		w := Waits{Apply: prev}
		if n.Role == RoleWorker && !n.Existing {
			w.Apply = lastCP
		}
		if n.Existing && n.Power == PowerRunning {
			w.VM = prev
		}
		w.StageOnVM = n.Role == RoleControlPlane && w.VM == ""
		n.Waits = w
		prev = name
		if n.Role == RoleControlPlane {
			lastCP = name
		}
	}

	// The stages run before every apply and VM restart: they require only
	// the nodes that need neither (running, answering configured, no VM
	// restart in this update). The others are checked by their own
	// applies' gates later in the rollout; requiring them here would make
	// the stages wait on steps that wait on the stages.
	p.StageRequires = []string{}
	for i := range p.Nodes {
		n := &p.Nodes[i]
		old := b.prev.node(n.Name)
		if old == nil || n.Power != PowerRunning || b.facts.Silent[n.Name] {
			continue
		}
		if next := p.nodeState(n); len(restartReasons(old, &next)) > 0 {
			continue
		}
		p.StageRequires = append(p.StageRequires, n.Name)
	}
}
