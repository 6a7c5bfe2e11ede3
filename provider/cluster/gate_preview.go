package cluster

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/provider/childargs"
	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talos"
)

// previewGateBindings are, in a preview, an existing node's health gate
// lists of workers and other nodes and its vmIds as values not known yet; nil
// otherwise (an update, or a new node). controlPlanes stays known: it is a
// required input (an unknown one fails infer's decoding in Check), and it
// lists the control planes only.
//
// Only a create or an update reads them (the gate's waits and the waits that
// end when a VM stops); ConfigurationApply's Check and Diff do not (a change
// of them alone is no change, and a preview shows no path of them for an
// existing node), so a preview that knew them would show the same. Knowing
// them is what made a preview's cost grow with the square of the cluster:
// every node's gate lists the whole cluster and its vmIds the nodes before it
// in the rollout, so n existing nodes moved about n² values through the
// Go SDK's registrations, the engine's Check and Diff calls and the
// provider's decoding; in a 60-node no-op preview most of the values of the
// nodes' applies (issue 14). The update (Construct again, not a dry run)
// registers them known: they are what its waits check and what its state
// records. A new node's create keeps them known in its preview, which lists
// every input of a new resource.
func (f *fanout) previewGateBindings(n *plan.Node, args *talos.ConfigurationApplyArgs) []childargs.Binding {
	if !f.ctx.DryRun() || !n.Existing || args.HealthGate == nil {
		return nil
	}
	g := args.HealthGate
	return []childargs.Binding{
		childargs.Bind(&g.Workers, unknownStrings()),
		childargs.Bind(&g.OtherNodes, unknownStrings()),
		childargs.Bind(&args.VmIds, unknownIntMap()),
	}
}

func unknownStrings() pulumi.StringArrayOutput {
	return pulumi.UnsafeUnknownOutput(nil).ApplyT(func(any) []string { return nil }).(pulumi.StringArrayOutput)
}

func unknownIntMap() pulumi.IntMapOutput {
	return pulumi.UnsafeUnknownOutput(nil).ApplyT(func(any) map[string]int { return nil }).(pulumi.IntMapOutput)
}
