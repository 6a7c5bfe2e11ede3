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
// no-ops. A new node's stage waits for its VM, so that it finds the node
// (in maintenance mode) rather than no one; an existing node's stage does
// not, since that VM may itself wait for an apply.
func (f *fanout) componentStages(nodes map[string]*plan.Node) (pulumi.Resource, error) {
	gate := f.stageGate()

	var prev pulumi.Resource

	for _, name := range f.plan.Rollout {
		n := nodes[name]
		if n.Role != plan.RoleControlPlane {
			continue
		}

		deps := []pulumi.Resource{prev}

		if !n.Existing {
			vm, err := f.vm(n, nil)
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

// stageGate is the health gate of the component stages: the nodes that
// exist before this update must be healthy before and after each control
// plane's components move; new and removed nodes are tolerated. Nil when no
// control plane exists yet (a new cluster: nothing to gate).
func (f *fanout) stageGate() pulumi.Map {
	var existing []string

	for i := range f.plan.Nodes {
		if f.plan.Nodes[i].Existing {
			existing = append(existing, f.plan.Nodes[i].Name)
		}
	}

	cps, workers, others := f.split(existing)
	if len(cps) == 0 {
		return nil
	}

	return withNodes(pulumi.Map{
		"kubernetesEndpoint": pulumi.String(f.plan.Endpoints.Kubernetes),
	}, cps, workers, others)
}
