package cluster

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
)

const tokenControlPlaneComponents = "proxmoxtalos:talos:ControlPlaneComponents"

type controlPlaneComponents struct {
	pulumi.CustomResourceState
}

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

		props := pulumi.Map{
			"node":                pulumi.String(addressOf(n)),
			"clientConfiguration": f.secrets.ClientConfiguration,
			"kubernetesVersion":   pulumi.String(f.plan.Cluster.KubernetesVersion),
		}
		if gate != nil {
			props["healthGate"] = gate
		}

		stage := &controlPlaneComponents{}
		if err := f.ctx.RegisterResource(tokenControlPlaneComponents, n.Name+"-components", props, stage, f.parent(deps...)...); err != nil {
			return nil, err
		}

		prev = stage
	}

	return prev, nil
}

// stageGate is the health gate of the component stages: the nodes the plan
// requires (those that run, answered configured and keep their VM in this
// update) must be healthy before and after each control plane's components
// move; the others are tolerated, their own applies' gates check them later.
// Nil when no control plane is required (a new cluster: nothing to gate).
func (f *fanout) stageGate() pulumi.Map {
	cps, workers, others := f.split(f.plan.StageRequires)
	if len(cps) == 0 {
		return nil
	}

	return withNodes(pulumi.Map{
		"kubernetesEndpoint": pulumi.String(f.plan.Endpoints.Kubernetes),
	}, cps, workers, others)
}
