package cluster

import (
	"slices"
	"testing"
)

// An update that changes some nodes (a patch of lab-cp-2 and lab-workers-2
// only) rolls those one at a time, the later behind the earlier past the
// settled nodes between them, and registers the nodes it leaves as they are
// as the create did (plan.Settle): their steps equal their state.
func TestChangedNodesRollPastSettledOnes(t *testing.T) {
	t.Parallel()
	inv, create := existingCluster(t, baseInputs())
	in := baseInputs()
	patch := []any{"machine:\n  env:\n    HTTP_PROXY: http://proxy:3128\n"}
	node := func(name string, patched bool) any {
		n := map[string]any{"name": name}
		if patched {
			n["patches"] = patch
		}
		return n
	}
	in["controlPlane"] = map[string]any{"nodes": []any{node("lab-cp-1", false), node("lab-cp-2", true), node("lab-cp-3", false)}}
	in["workerPools"] = []any{map[string]any{"name": "workers", "nodes": []any{node("lab-workers-1", false), node("lab-workers-2", true)}}}
	up, _, err := construct(t, inv, in, appliedConfigs(create))
	must(t, err)

	for _, name := range []string{"lab-cp-1", "lab-cp-3", "lab-workers-1"} {
		for _, typ := range []string{"VirtualMachine", "ConfigurationApply"} {
			got, want := up.get(t, typ, name), create.get(t, typ, name)
			if !slices.Equal(got.deps, want.deps) || !got.inputs.Equals(want.inputs) {
				t.Errorf("settled %s %s: registered %v (deps %v), the create %v (deps %v)", typ, name, got.inputs, got.deps, want.inputs, want.deps)
			}
		}
	}
	for _, c := range []struct{ kind, res, dep string }{
		{"ConfigurationApply", "lab-cp-2", "ControlPlaneComponents::lab-cp-3-components"},
		{"ConfigurationApply", "lab-cp-2", "Bootstrap::lab"},
		{"VirtualMachine", "lab-cp-2", "ConfigurationApply::lab-cp-1"},
		{"ConfigurationApply", "lab-workers-2", "ConfigurationApply::lab-cp-2"},
		{"ConfigurationApply", "lab-workers-2", "ConfigurationApply::lab-workers-1"},
		{"VirtualMachine", "lab-workers-2", "ConfigurationApply::lab-cp-2"},
	} {
		if r := up.get(t, c.kind, c.res); !depends(r, c.dep) {
			t.Errorf("changed %s %s does not wait for %s: %v", c.kind, c.res, c.dep, r.deps)
		}
	}
	for _, name := range []string{"lab-cp-2", "lab-workers-2"} {
		if g, ok := healthGate(t, up, name).GetOk("clusterCreate"); ok {
			t.Errorf("changed %s's gate clusterCreate = %v", name, g)
		}
	}
	if w := strs(healthGate(t, up, "lab-workers-2").Get("workers")); !slices.Equal(w, []string{"10.0.0.13", "10.0.0.14"}) {
		t.Errorf("changed lab-workers-2's gate requires workers %v", w)
	}
}
