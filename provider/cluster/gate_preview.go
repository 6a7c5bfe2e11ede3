package cluster

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/provider/childargs"
	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talos"
)

// previewGateBindings are, in a preview, an existing node's health gate
// lists and vmIds as the state of its last update holds them when its
// Check moved them (talos.GateListsMove): no lists, vmIds the node's own
// VMID only, and gateLists the record (counts and digest) of the lists and
// VMIDs an update would send, computed as ConfigurationApply's Check
// computes it (talos.PreviewGateLists) from the VMs' outputs (unknown while
// a VMID is). ok is false otherwise (an update, a new node, a gate with
// nothing to move): the caller binds the full vmIds.
//
// Only a create or an update reads the lists (the gate's waits and the
// waits that end when a VM stops); ConfigurationApply's Check and Diff do
// not (a change of them alone is no change), so a preview that sent them
// would show the same. Sending them is what made a preview's cost grow
// with the square of the cluster: every node's gate lists the whole
// cluster and its vmIds the nodes before it in the rollout, so n existing
// nodes moved about n² values through the Go SDK's registrations, the
// engine's Check and Diff calls and the provider's decoding (issue 14).
// The record is what Check keeps of them (provider/talos gate_lists.go
// moveOut), so the checked inputs of a node nothing changes equal its
// state, and the Pulumi CLI, which writes the whole state after any step
// whose inputs differ from the state's (pulumi pkg v3.274.1
// backend/snapshot.go sameSnapshotMutation.mustWrite: inputs, sorted
// dependencies...), even in a preview, writes nothing. A create or update
// never sees these inputs: the update (Construct again, not a dry run)
// registers the lists known, which is what its waits check; a record
// without its lists fails an operation (putBack). A new node's create keeps
// the nodes its gate requires known in its preview, which lists every input
// of a new resource; the nodes it tolerates are unknown (previewTolerated).
func (f *fanout) previewGateBindings(n *plan.Node, args *talos.ConfigurationApplyArgs, required []string) ([]childargs.Binding, bool) {
	if !f.ctx.DryRun() || !n.Existing || args.HealthGate == nil {
		return nil, false
	}
	g := *args.HealthGate
	node, workers, others := args.Node, g.Workers, g.OtherNodes
	if !talos.GateListsMove(node, workers, others, f.vmIDAddresses(required)) {
		return nil, false // the update sends no more than its state keeps
	}
	g.Workers, g.OtherNodes = keptOfList(workers), keptOfList(others)
	args.HealthGate = &g
	// From the VMs' outputs, as the update's vmIds: the VMs are then the
	// apply's dependencies as in the update (and in the state), which the
	// CLI compares too.
	vmIDs := f.vmIDs(required)
	own := vmIDs.ApplyT(func(ids map[string]int) map[string]int {
		_, own := talos.PreviewGateLists(node, workers, others, ids)
		return own
	}).(pulumi.IntMapOutput)
	record := vmIDs.ApplyT(func(ids map[string]int) string {
		r, _ := talos.PreviewGateLists(node, workers, others, ids)
		return r
	}).(pulumi.StringOutput)
	return []childargs.Binding{
		childargs.Bind(&args.VmIds, own),
		childargs.BindPtr(&args.GateLists, record),
	}, true
}

// keptOfList is what the state keeps of a gate list whose Check moved the
// lists: an empty list, as the update sent it (listed), since infer puts
// back an empty list of the inputs where the Check left none
// (provider/framework encode.go); nothing in place of a list with nodes,
// or of a list the update leaves out (a settled node's, as its create).
func keptOfList(l []string) []string {
	if l != nil && len(l) == 0 {
		return []string{}
	}
	return nil
}

// previewTolerated is, in a preview, a new node's otherNodes (the nodes its
// gate tolerates, not those it requires) as an unknown list. In a new
// cluster every node's gate lists every other node: at 60 nodes about 3 500
// values in the preview's planned state, which the Pulumi CLI serializes
// whole after each step of a preview too (pulumi pkg v3.274.1
// engine/update.go previewActions.OnResourceStepPre/Post, through the
// SnapshotManager the diy backend installs with a DiscardPersister:
// backend/diy/backend.go; backend/snapshot.go saveSnapshot), so that a new
// cluster's preview grew with the cube of its size (issue 14). The create's
// Check moves the lists out of the state anyway (provider/talos
// gate_lists.go). What the node requires (controlPlanes, workers) stays
// known: a reviewer reads it. Unknown, not left out: a node created again
// (its VM gone) has a last gate that named other nodes, and Check refuses
// inputs that drop them (gate_lists_dropped.go).
func (f *fanout) previewTolerated(n *plan.Node, args *talos.ConfigurationApplyArgs) []childargs.Binding {
	if !f.ctx.DryRun() || n.Existing || args.HealthGate == nil || len(args.HealthGate.OtherNodes) == 0 {
		return nil
	}
	unknown := pulumi.UnsafeUnknownOutput(nil).ApplyT(func(any) []string { return nil }).(pulumi.StringArrayOutput)
	return []childargs.Binding{childargs.Bind(&args.HealthGate.OtherNodes, unknown)}
}
