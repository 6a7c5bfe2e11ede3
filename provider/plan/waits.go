package plan

// Waits says what a node's steps wait for in an update. These are the
// ordering decisions of the rollout; the component only wires them.
//
// A cluster that exists (any node in the previous state) changes one
// healthy node at a time, control planes first, and no wait depends on
// itself, so a node's VM step never waits on that node (a VM that does not
// run is repaired by the next update without a refresh).
//
// A new cluster (Plan.NewCluster: no node in the previous state, so nothing
// runs and there is no quorum to keep) comes up as talosctl users bring one
// up: each node is given its configuration as soon as its VM boots, without
// waiting for it or for any other node to install (apply-config), etcd is
// bootstrapped on the first control plane as soon as it accepts it, and one
// health check at the end waits for every node. The applies still chain in
// rollout order, each returning at once, so that a later destroy removes
// the nodes in the safe order (workers, then control planes one at a time).
type Waits struct {
	// VM is the node whose configuration apply this node's VM step waits
	// for, "" for none. A running VM's changes (restarts for new hardware)
	// roll behind the previous node of the rollout. A VM that is new,
	// stopped or not known waits for nothing: every later step of its node,
	// and every health check that requires the node, needs it to run.
	VM string
	// AfterControlPlaneVMs: the worker's VM is created once every control
	// plane's VM is. The engine runs a bounded number of steps at once
	// (`pulumi up --parallel`, 4 per CPU by default: 8 on a 2-core CI
	// runner), and the control planes set a new cluster's critical path
	// (bootstrap, etcd joins) while a worker only needs the first API
	// server, 30 s or more later. Without this, VMs were created in the
	// order their nodes' ISO downloads ended, and a control plane left for
	// a second batch came up that much later. Set for a new cluster's
	// workers (and a settled worker, registered as its create was).
	AfterControlPlaneVMs bool
	// Apply is the node whose apply this node's apply waits for: the
	// previous node of the rollout, or for a new worker the last control
	// plane (new workers are configured in parallel); "" for the first.
	Apply string
	// StageOnVM: the control plane's component stage waits for its VM
	// (one that waits for nothing), so that it finds the node booting
	// rather than no one.
	StageOnVM bool
	// AfterStages: the apply waits for the last control plane component
	// stage (a Kubernetes upgrade moves every control plane's components
	// before any kubelet). Not in a new cluster: nothing runs to upgrade.
	AfterStages bool
	// AfterBootstrap: the apply waits for the etcd bootstrap, so the node
	// joins a bootstrapped cluster (every node after the bootstrap node).
	// Not in a new cluster: its nodes install while the first one is
	// bootstrapped, and join etcd when it is.
	AfterBootstrap bool
	// WithCluster: the node is created with its cluster: its apply gives
	// the node its configuration and returns, waiting neither for the
	// nodes before it to be healthy nor for the node to install; the
	// cluster's final health check waits for it.
	WithCluster bool
	// AsCreated: the node exists and this update leaves it as it is
	// (Plan.Settle): its steps are registered as a new cluster's create
	// registers them (WithCluster's waits, its health gate's clusterCreate),
	// the shape its state has since its cluster's create.
	AsCreated bool
	// After is the last node before this one in the rollout that the update
	// changes (Plan.Settle), "" for none: this node's apply waits for its
	// apply too (and so does its VM step, but a settled control plane's),
	// so that changes roll one node at a time past the settled nodes
	// between them, and a settled node's steps come after them.
	After string
}

// buildWaits decides what each node's steps wait for, and which nodes the
// control plane component stages require to be healthy.
func (b *builder) buildWaits() {
	p := &b.plan
	byName := map[string]*Node{}
	for i := range p.Nodes {
		byName[p.Nodes[i].Name] = &p.Nodes[i]
	}
	p.NewCluster = b.prev == nil || len(b.prev.Nodes) == 0
	prev, lastCP := "", ""
	for _, name := range p.Rollout {
		n := byName[name]
		w := Waits{Apply: prev, AfterStages: true, AfterBootstrap: prev != ""}
		if n.Role == RoleWorker && !n.Existing {
			w.Apply = lastCP
		}
		if n.Existing && n.Power == PowerRunning {
			w.VM = prev
		}
		if p.NewCluster {
			w.AfterStages, w.AfterBootstrap, w.WithCluster = false, false, true
			w.AfterControlPlaneVMs = n.Role == RoleWorker
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

// MarkBringup says in s how a new cluster comes up, so that the preview
// shows which mode the update runs in.
func (p *Plan) MarkBringup(s *Summary) {
	if p.NewCluster && len(p.Nodes) > 0 {
		s.Bringup = "new cluster: all nodes configured at once, etcd bootstrapped on " + p.Bootstrap + ", one health check at the end"
	}
}
