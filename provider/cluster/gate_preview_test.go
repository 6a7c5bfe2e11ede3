package cluster

import (
	"slices"
	"testing"
)

// In a preview, an existing node's apply has its gate's lists of workers and
// other nodes and its vmIds unknown (only a create or an update reads them; a preview of n nodes
// would otherwise move n² values); a new node's apply, whose create the
// preview lists input by input, and every apply of the update itself have
// them known. What the preview knows of the gate (vm, endpoint, the control
// planes: a required input) stays.
func TestPreviewLeavesExistingNodesGateListsUnknown(t *testing.T) {
	t.Parallel()
	inv, first := existingCluster(t, baseInputs())
	in := baseInputs()
	in["workerPools"] = []any{map[string]any{"name": "workers", "count": 3}}

	preview, _, err := constructDry(t, true, inv, in, appliedConfigs(first))
	must(t, err)
	update, _, err := constructDry(t, false, inv, in, appliedConfigs(first))
	must(t, err)

	lists := []string{"workers", "otherNodes"}
	for _, a := range preview.byType("ConfigurationApply") {
		gate := a.inputs.Get("healthGate").AsMap()
		newNode := a.name == "lab-workers-3"
		for _, l := range lists {
			if unknown := gate.Get(l).IsComputed(); unknown == newNode {
				t.Errorf("preview: %s healthGate.%s unknown = %v (new node: %v)", a.name, l, unknown, newNode)
			}
		}
		if unknown := a.inputs.Get("vmIds").IsComputed(); unknown == newNode {
			t.Errorf("preview: %s vmIds unknown = %v (new node: %v)", a.name, unknown, newNode)
		}
		if !gate.Get("vm").IsString() || !gate.Get("kubernetesEndpoint").IsString() || !gate.Get("controlPlanes").IsArray() {
			t.Errorf("preview: %s gate lost what the preview shows: %v", a.name, gate)
		}
	}
	if cps := strs(healthGate(t, preview, "lab-workers-3").Get("controlPlanes")); !slices.Equal(cps, []string{"10.0.0.10", "10.0.0.11", "10.0.0.12"}) {
		t.Errorf("preview: the new worker's gate requires control planes %v", cps)
	}

	for _, a := range update.byType("ConfigurationApply") {
		gate := a.inputs.Get("healthGate").AsMap()
		if !gate.Get("controlPlanes").IsArray() || !a.inputs.Get("vmIds").IsMap() {
			t.Errorf("update: %s gate %v, vmIds %v: want them known", a.name, gate, a.inputs.Get("vmIds"))
		}
	}
	if w := strs(healthGate(t, update, "lab-workers-2").Get("workers")); !slices.Equal(w, []string{"10.0.0.13", "10.0.0.14"}) {
		t.Errorf("update: existing lab-workers-2's gate requires workers %v", w)
	}
}
