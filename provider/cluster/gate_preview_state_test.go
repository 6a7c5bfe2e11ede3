package cluster

import (
	"slices"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talos"
)

// checkedStates are the checked inputs of each node's ConfigurationApply
// and ControlPlaneComponents of a construct, by key, as the engine would
// store them (or compare them with the state): each registration through
// the resource's own Check, against the old inputs in olds.
func checkedStates(t *testing.T, rec *recorder, olds map[string]property.Map) map[string]property.Map {
	t.Helper()
	checks := map[string]infer.InferredResource{
		"ConfigurationApply":     framework.Resource(&talos.ConfigurationApply{}),
		"ControlPlaneComponents": infer.Resource(&talos.ControlPlaneComponents{}),
	}
	out := map[string]property.Map{}
	for typ, res := range checks {
		for _, reg := range rec.byType(typ) {
			urn := presource.NewURN("test", "proj", "", presource.RootStackType, reg.name)
			resp, err := res.Check(t.Context(), p.CheckRequest{Urn: urn, State: olds[reg.key()], Inputs: reg.inputs})
			if err != nil || len(resp.Failures) > 0 {
				t.Fatalf("Check of %s: %v %v", reg.key(), resp.Failures, err)
			}
			out[reg.key()] = resp.Inputs
		}
	}
	return out
}

// differingKeys are the top-level keys whose values differ.
func differingKeys(a, b property.Map) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range []property.Map{a, b} {
		for k := range m.All {
			if !seen[k] && !a.Get(k).Equals(b.Get(k)) {
				out = append(out, k)
			}
			seen[k] = true
		}
	}
	return out
}

// A no-op preview of an existing cluster makes the engine no state to write:
// the checked inputs and the dependencies of each node's apply and component
// stage equal those its last update stored (the Pulumi CLI writes the whole state after any
// step whose inputs differ, even in a preview: issue 14). The preview
// sends an existing node's gate lists as their record (gateLists), not the
// lists. After an update that changed every node's configuration, only the
// preview fields that update derived (configView, configChange) differ
// until the next no-op update (inherent: they say what an update does).
func TestNoopPreviewChecksToTheStoredState(t *testing.T) {
	t.Parallel()
	in := baseInputs()
	inv, create := existingCluster(t, in)
	state := checkedStates(t, create, nil)

	// day two: the first update after the create stores the rollout's gates
	up, _, err := constructDry(t, false, inv, in, appliedConfigs(create))
	must(t, err)
	state = checkedStates(t, up, state)

	assertNoopPreview := func(step string, last *recorder, running runningConfigs) {
		t.Helper()
		preview, _, err := constructDry(t, true, inv, in, running)
		must(t, err)
		// the CLI compares the dependencies too (sorted)
		for _, typ := range []string{"ConfigurationApply", "ControlPlaneComponents"} {
			for _, reg := range preview.byType(typ) {
				if stored := last.get(t, typ, reg.name).deps; !slices.Equal(reg.deps, stored) {
					t.Errorf("%s: %s depends on %v, its state on %v", step, reg.key(), reg.deps, stored)
				}
			}
		}
		checked := checkedStates(t, preview, state)
		if len(checked) != 8 {
			t.Fatalf("%s: %d applies and stages checked, want 8", step, len(checked))
		}
		for key, got := range checked {
			if !got.Equals(state[key]) {
				for _, k := range differingKeys(got, state[key]) {
					t.Errorf("%s: %s checked inputs differ from the state at %s: %v, state %v", step, key, k, got.Get(k), state[key].Get(k))
				}
			}
		}
		apply := preview.get(t, "ConfigurationApply", "lab-workers-2")
		if gate := apply.inputs.Get("healthGate").AsMap(); !gate.Get("workers").IsNull() || apply.inputs.Get("vmIds").AsMap().Len() != 1 {
			t.Errorf("%s: the preview sent lab-workers-2's gate lists %v and vmIds %v, want none but its own VMID", step, gate, apply.inputs.Get("vmIds"))
		}
	}
	assertNoopPreview("after one update", up, appliedConfigs(up))

	// a configuration change of every node, then a no-op update
	in["patches"] = []any{"machine:\n  env:\n    HTTP_PROXY: http://proxy:3128\n"}
	changed, _, err := constructDry(t, false, inv, in, appliedConfigs(up))
	must(t, err)
	state = checkedStates(t, changed, state)
	preview, _, err := constructDry(t, true, inv, in, appliedConfigs(changed))
	must(t, err)
	for key, got := range checkedStates(t, preview, state) {
		for _, k := range differingKeys(got, state[key]) {
			if k != "configView" && k != "configChange" {
				t.Errorf("after a configuration change: %s checked inputs differ from the state at %s", key, k)
			}
		}
	}
	settle, _, err := constructDry(t, false, inv, in, appliedConfigs(changed))
	must(t, err)
	state = checkedStates(t, settle, state)
	assertNoopPreview("after a configuration change and a no-op update", settle, appliedConfigs(settle))
}
