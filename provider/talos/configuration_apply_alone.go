package talos

import (
	"strings"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
)

// LeavesNodeAlone reports whether an update that gives the node whose
// ConfigurationApply state is st the inputs in leaves the node and its
// cluster alone, whatever the engine then runs for it: no replacement (the
// same address, the same machine: Diff), no work on the node (needsNode:
// the same configuration digest, Talos version and installer image, and
// the last operation verified), and no VM restart or disk move whose health
// it would check (healthGate.vm). Any other change (endpoints, credentials, options)
// only changes the state (Update). running and runningVersion are what the
// node answers now: a refresh (`pulumi up --refresh`) puts them into the
// state before Diff (Read), so they must agree too. When in doubt, false.
//
// TalosCluster registers the nodes for which this holds as its create did,
// without the rollout's waits (cluster.settledNodes): their steps must not
// touch a node out of the rollout's order.
func LeavesNodeAlone(st ConfigurationApplyState, in ConfigurationApplyArgs, running, runningVersion string) bool {
	if st.Node != in.Node || in.MachineConfiguration == "" || running == "" || runningVersion == "" ||
		modeOf(st.ApplyMode) != modeOf(in.ApplyMode) || modeOf(st.ApplyMode) == talosapi.ApplyStaged {
		return false // a staged configuration is read back otherwise (Read)
	}
	// Another machine at the address (Diff; Check's newMachine compares the
	// old inputs' machineId, which the state keeps as given).
	if old, next := deref(st.MachineId), deref(in.MachineId); old != "" && next != "" && !strings.EqualFold(old, next) {
		return false
	}
	// The VM restarted or its disks moved: Update waits for health (vmChange,
	// vmChangedByCheck). The latter also fires on a key the stored gate
	// lacks, which Check decides from the old inputs: equal sets only. (A
	// gate that only lacks keys is recorded by a state-only update, Diff's
	// gateKeysAdded: settled from the next update on.)
	if g, n := st.HealthGate, in.HealthGate; g != nil && g.Vm != nil && n != nil && n.Vm != nil &&
		(vmChanged(*g.Vm, *n.Vm) || vmChanged(*n.Vm, *g.Vm)) {
		return false
	}
	if needsNode(st, in) {
		return false
	}
	digest, err := talosapi.ConfigDigest([]byte(running))
	if err != nil {
		return false
	}
	refreshed := st
	refreshed.ConfigDigest, refreshed.RunningVersion = digest, runningVersion
	return !needsNode(refreshed, in)
}

// StageUnchanged reports whether a ControlPlaneComponents whose state is st
// has nothing to do for Kubernetes version (its Diff finds no change), so
// that TalosCluster may register it as its create did.
func StageUnchanged(st ControlPlaneComponentsState, version string) bool {
	return st.KubernetesVersion != "" && version != "" && st.Outcome != "" && // "": its last operation failed part-way
		!diffControlPlaneComponents(st, ControlPlaneComponentsArgs{KubernetesVersion: version}).HasChanges
}
