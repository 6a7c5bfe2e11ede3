package cluster

import (
	"strings"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/proxmox"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talos"
)

// settledNodes are the nodes this update leaves as they are, for
// plan.Settle, which registers them as the cluster's create did (no
// rollout waits, a create's gate). Safe only if none of their steps runs
// in a way that touches the node or its VM: such a step would not wait its
// turn. So a node is settled only when the providers' own conditions say
// so, from what the engine will compare: the stack's last state (the
// outputs the Diffs compare the inputs with: readStack) and what Proxmox
// and the node answer now (what a refresh puts into the state first):
// its VirtualMachine finds no change (proxmox.Unchanged, with the very
// inputs fanout.vm registers) and its ConfigurationApply leaves the node
// alone (talos.LeavesNodeAlone). stagesSettled: every control plane is
// settled and each one's ControlPlaneComponents has nothing to do.
//
// Nothing is settled unless every input and configuration is known now
// (gen, made with the cluster's secrets before anything is registered),
// no node is created or removed and no version moves. When in doubt, a
// node is not settled: that only costs the Pulumi CLI a state write (issue
// 14).
func (f *fanout) settledNodes() (settled map[string]bool, stagesSettled bool) {
	p, base, gen := f.plan, f.base, f.generated
	if gen == nil || len(f.unknownInputs) > 0 || f.vmUnknown.any() || len(p.Removed) > 0 ||
		base.KubernetesUpgrade != "" || base.TalosUpgrade != "" || !allExisting(p) {
		return nil, false
	}
	live := map[int]plan.ObservedVM{}
	for _, vm := range f.observed {
		if vm.Config != nil {
			live[vm.VMID] = vm
		}
	}
	if len(live) == 0 {
		return nil, false // no VM's configuration was read (an offline preview)
	}
	resources, err := f.stack(f.ctx)
	if err != nil {
		return nil, false
	}
	last := lastStates(resources)
	changing := changingNodes(base)
	settled = map[string]bool{}
	for i := range p.Nodes {
		n := &p.Nodes[i]
		summary := f.onlyLayer == "providers" || !changing[n.Name]
		providers := f.onlyLayer == "summary" || f.leftAlone(n, last, live)
		if n.Existing && n.Power == plan.PowerRunning && summary && providers {
			settled[n.Name] = true
		}
	}
	stagesSettled = true
	for i := range p.Nodes {
		n := &p.Nodes[i]
		if n.Role != plan.RoleControlPlane {
			continue
		}
		st, ok := last.stages[n.Name+"-components"]
		if !settled[n.Name] || !ok || !talos.StageUnchanged(st, p.Cluster.KubernetesVersion) {
			stagesSettled = false
		}
	}
	return settled, stagesSettled
}

// leftAlone: the node's VM step and apply step would change nothing on it.
func (f *fanout) leftAlone(n *plan.Node, last lastState, live map[int]plan.ObservedVM) bool {
	vmState, okVM := last.vms[n.Name]
	applyState, okApply := last.applies[n.Name]
	reading, okRead := f.readings[n.Name]
	cfg := f.generated.configs[n.Name]
	if !okVM || !okApply || !okRead || reading.err != nil || cfg == "" {
		return false
	}
	// Diff also asks Proxmox whether the VM is still there and runs
	// (withLive): the VM the plan observed must be the state's.
	obs, ok := live[vmState.VMID]
	if !ok || obs.Host != vmState.Node || obs.Status != "running" || obs.Config == nil {
		return false
	}
	args := *vmArgs(f.plan.Cluster.Name, n)
	if b := n.VM.Boot; b.ISOFile != "" && args.Clone == nil {
		args.ISO = ptr(plan.ISOVolumeID(b.ISOStorage, b.ISOFile)) // the download's volumeId (fanout.vm)
	}
	args.Clone = vmState.Clone // ignoreChanges (fanout.vm): the engine sends the old value
	if !proxmox.Unchanged(vmState, args, obs.Config) {
		return false
	}
	in := talos.ConfigurationApplyArgs{Node: addressOf(n), MachineConfiguration: cfg,
		HealthGate: &talos.HealthGate{Vm: ptr(vmSettings(f.nodeState(n.Name)))}}
	if vmState.SmbiosUUID != "" {
		in.MachineId = ptr(vmState.SmbiosUUID) // the VM's output, as fanout.apply binds it
	}
	return talos.LeavesNodeAlone(applyState, in, reading.running.Config, reading.running.TalosVersion)
}

// nodeState is the named node's state after this update.
func (f *fanout) nodeState(name string) *plan.NodeState {
	for i := range f.state.Nodes {
		if f.state.Nodes[i].Name == name {
			return &f.state.Nodes[i]
		}
	}
	return &plan.NodeState{}
}

// lastState are the cluster's node resources in the stack's last state, by
// resource name; a resource whose outputs do not read is left out.
type lastState struct {
	vms     map[string]proxmox.VirtualMachineState
	applies map[string]talos.ConfigurationApplyState
	stages  map[string]talos.ControlPlaneComponentsState
}

func lastStates(resources map[string]any) lastState {
	last := lastState{vms: map[string]proxmox.VirtualMachineState{}, applies: map[string]talos.ConfigurationApplyState{},
		stages: map[string]talos.ControlPlaneComponentsState{}}
	for urn, v := range resources {
		r, _ := v.(map[string]any)
		outs, _ := r["outputs"].(map[string]any)
		if !strings.Contains(urn, tokenComponent+"$") || outs == nil {
			continue
		}
		name := urn[strings.LastIndex(urn, "::")+2:]
		switch r["type"] {
		case tokenVirtualMachine:
			var st proxmox.VirtualMachineState
			if decodeState(urn, outs, &st, "") == nil {
				last.vms[name] = st
			}
		case tokenConfigurationApply:
			var st talos.ConfigurationApplyState
			if decodeState(urn, outs, &st, "") == nil {
				last.applies[name] = st
			}
		case tokenControlPlaneComponents:
			var st talos.ControlPlaneComponentsState
			if decodeState(urn, outs, &st, "") == nil {
				last.stages[name] = st
			}
		}
	}
	return last
}

// changingNodes are the nodes the plan's summary lists in any way.
func changingNodes(s plan.Summary) map[string]bool {
	changing := map[string]bool{}
	for _, c := range s.Nodes {
		changing[c.Name] = true
	}
	for _, l := range [][]string{s.Started, s.Resumed, s.Unknown} {
		for _, name := range l {
			changing[name] = true
		}
	}
	return changing
}

// allExisting: no node is created (a new cluster's, a scale-out's, one whose
// VM is gone): an update that creates nodes writes its state anyway, and
// keeps the rollout's waits.
func allExisting(p *plan.Plan) bool {
	for i := range p.Nodes {
		if !p.Nodes[i].Existing {
			return false
		}
	}
	return len(p.Nodes) > 0
}
