package cluster

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/provider/childargs"
	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talos"
)

// componentStages registers one ControlPlaneComponents per control plane,
// chained in rollout order, and returns the last (nil without control
// planes). A Kubernetes upgrade thus moves kube-apiserver, controller
// manager, scheduler and kube-proxy on every control plane before any
// kubelet moves, as the Kubernetes version skew policy requires and
// `talosctl upgrade-k8s` does (siderolabs/talos
// pkg/cluster/kubernetes/talos_managed.go).
//
// A stage changes nothing on a node whose components already run the
// version, or that is not configured yet: a new cluster's stages, and those
// an existing stack gets on its first update with this provider, are
// no-ops. A stage reads what its node runs, so it waits for the node's VM
// when that VM waits for nothing (new, stopped or missing: plan.Waits), to
// find the node booting rather than no one; a running node's VM may itself
// wait for an apply, which waits for the stages.
func (f *fanout) componentStages(nodes map[string]*plan.Node) (pulumi.Resource, error) {
	gate := f.stageGate()

	var prev pulumi.Resource

	for _, name := range f.plan.Rollout {
		n := nodes[name]
		if n.Role != plan.RoleControlPlane {
			continue
		}

		deps := []pulumi.Resource{prev}

		if n.Waits.StageOnVM {
			vm, err := f.vm(n)
			if err != nil {
				return nil, err
			}

			deps = append(deps, vm)
		}

		args := &talos.ControlPlaneComponentsArgs{
			Node:              addressOf(n),
			KubernetesVersion: f.plan.Cluster.KubernetesVersion,
			HealthGate:        gate,
		}
		binds := []childargs.Binding{
			childargs.Bind(&args.ClientConfiguration, f.secrets.ClientConfiguration),
			childargs.Bind(&args.VmIds, f.stageVMIDs(n, nodes)),
		}

		stage := &controlPlaneComponents{}
		if err := registerChild(f.ctx, n.Name+"-components", args, binds, stage, f.parent(deps...)...); err != nil {
			return nil, err
		}

		prev = stage
	}

	return prev, nil
}

// stageVMIDs are the VMIDs by address of a stage's node and of the nodes
// its gate requires (StageRequires). The node's own VM, when the stage
// waits for it (new, stopped or missing: plan.Waits.StageOnVM), gives its
// vmId output: a VM created in this update gets the next free id, not one
// the plan knew, and watching another id would end the wait with "no
// longer exists" (or not watch the node at all). The others give the id
// the plan knows (an existing VM's, or a pinned one): a running node's VM
// waits for an apply, which waits for the stages, so it is not changed
// before them, and its output would make the stages wait for it (a cycle).
func (f *fanout) stageVMIDs(n *plan.Node, nodes map[string]*plan.Node) pulumi.IntMapOutput {
	out := pulumi.IntMap{}
	for _, name := range append([]string{n.Name}, f.plan.StageRequires...) {
		if r := nodes[name]; r != nil && r.VM.VMID > 0 {
			out[addressOf(r)] = pulumi.Int(r.VM.VMID)
		}
	}
	if vm := f.vms[n.Name]; vm != nil && n.Waits.StageOnVM {
		out[addressOf(n)] = vm.VMID
	}
	return out.ToIntMapOutput()
}

// stageGate is the health gate of the component stages: the nodes the plan
// requires (those that run, answered configured and keep their VM in this
// update) must be healthy before and after each control plane's components
// move; the others are tolerated, their own applies' gates check them later.
// Nil when no control plane is required (a new cluster: nothing to gate).
func (f *fanout) stageGate() *talos.HealthGate {
	s := f.split(f.plan.StageRequires)
	if len(s.cps) == 0 {
		return nil
	}

	return &talos.HealthGate{
		ControlPlanes: s.cps, Workers: listed(s.workers), OtherNodes: listed(s.others),
		KubernetesEndpoint: ptr(f.plan.Endpoints.Kubernetes),
	}
}
