package cluster

import (
	"slices"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talos"
)

// In a preview, an existing node's apply sends its gate's lists of workers
// and other nodes and its vmIds as the state keeps them (only a create or
// an update reads the lists; a preview of n nodes would otherwise move n²
// values): no list with nodes, its own VMID, and gateLists, the record of
// the lists and VMIDs the update sends. A new node's apply, whose create
// the preview lists input by input, and every apply of the update itself
// have them known. What the preview knows of the gate (vm, endpoint, the
// control planes: a required input) stays.
func TestPreviewSendsExistingNodesGateListsAsTheirRecord(t *testing.T) {
	t.Parallel()
	inv, first := existingCluster(t, baseInputs())
	in := baseInputs()
	in["workerPools"] = []any{map[string]any{"name": "workers", "count": 3}}

	preview, _, err := constructDry(t, true, inv, in, appliedConfigs(first))
	must(t, err)
	update, _, err := constructDry(t, false, inv, in, appliedConfigs(first))
	must(t, err)

	for _, a := range preview.byType("ConfigurationApply") {
		gate := a.inputs.Get("healthGate").AsMap()
		if a.name == "lab-workers-3" {
			if len(strs(gate.Get("workers"))) != 3 || a.inputs.Get("vmIds").AsMap().Len() < 2 || !a.inputs.Get("gateLists").IsNull() {
				t.Errorf("preview: new node %s: gate %v, vmIds %v: want them known, no gateLists", a.name, gate, a.inputs.Get("vmIds"))
			}
			continue
		}
		u := update.get(t, "ConfigurationApply", a.name).inputs
		ug := u.Get("healthGate").AsMap()
		ids := map[string]int{}
		for addr, id := range u.Get("vmIds").AsMap().All {
			ids[addr] = int(id.AsNumber())
		}
		record, own := talos.PreviewGateLists(a.inputs.Get("node").AsString(), strs(ug.Get("workers")), strs(ug.Get("otherNodes")), ids)
		if got := a.inputs.Get("gateLists"); !got.IsString() || got.AsString() != record {
			t.Errorf("preview: %s gateLists %v, want the update's record %q", a.name, got, record)
		}
		if n := a.inputs.Get("vmIds").AsMap().Len(); n != 1 || len(own) != 1 {
			t.Errorf("preview: %s sends %d VMIDs (own: %v), want its own one", a.name, n, own)
		}
		for _, l := range []string{"workers", "otherNodes"} {
			if len(strs(gate.Get(l))) > 0 {
				t.Errorf("preview: %s sends healthGate.%s %v", a.name, l, gate.Get(l))
			}
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
		if !gate.Get("controlPlanes").IsArray() || !a.inputs.Get("vmIds").IsMap() || !a.inputs.Get("gateLists").IsNull() {
			t.Errorf("update: %s gate %v, vmIds %v: want them known, no gateLists", a.name, gate, a.inputs.Get("vmIds"))
		}
	}
	if w := strs(healthGate(t, update, "lab-workers-2").Get("workers")); !slices.Equal(w, []string{"10.0.0.13", "10.0.0.14"}) {
		t.Errorf("update: existing lab-workers-2's gate requires workers %v", w)
	}
}

// In a preview, a new node's gate lists the nodes it only tolerates
// (otherNodes) as unknown: in a new cluster each gate would list every other
// node, which the Pulumi CLI serializes again after every step of a preview
// (issue 14). What the gate requires stays known for the reviewer; the
// update sends the list. A new node with no other node to tolerate sends
// none (the add-a-worker preview golden).
func TestPreviewSendsNewNodesToleratedNodesUnknown(t *testing.T) {
	t.Parallel()
	inv := &fakeInventory{hosts: threeHosts()}
	preview, _, err := constructDry(t, true, inv, baseInputs())
	must(t, err)
	update, _, err := constructDry(t, false, inv, baseInputs())
	must(t, err)

	for _, a := range preview.byType("ConfigurationApply") {
		gate := a.inputs.Get("healthGate").AsMap()
		others := strs(healthGate(t, update, a.name).Get("otherNodes"))
		if len(others) == 0 {
			t.Fatalf("update: %s's gate tolerates no node; the test needs a cluster whose gates do", a.name)
		}
		if !gate.Get("otherNodes").IsComputed() {
			t.Errorf("preview: new node %s sends healthGate.otherNodes %v, want unknown (the update sends %v)", a.name, gate.Get("otherNodes"), others)
		}
		if !gate.Get("controlPlanes").IsArray() || gate.Get("controlPlanes").AsArray().Len() == 0 {
			t.Errorf("preview: new node %s's gate lost its control planes: %v", a.name, gate)
		}
	}
	if w := strs(healthGate(t, preview, "lab-workers-2").Get("workers")); !slices.Equal(w, []string{"10.0.0.14"}) {
		t.Errorf("preview: new worker lab-workers-2's gate requires workers %v, want itself, known", w)
	}

	// Scaling out by the last worker of the rollout: nothing else to tolerate.
	existing, first := existingCluster(t, baseInputs())
	in := baseInputs()
	in["workerPools"] = []any{map[string]any{"name": "workers", "count": 3}}
	scaled, _, err := constructDry(t, true, existing, in, appliedConfigs(first))
	must(t, err)
	if g := healthGate(t, scaled, "lab-workers-3"); g.Get("otherNodes").IsComputed() || len(strs(g.Get("otherNodes"))) > 0 {
		t.Errorf("preview: the added last worker's gate sends otherNodes %v, want none", g.Get("otherNodes"))
	}
}
