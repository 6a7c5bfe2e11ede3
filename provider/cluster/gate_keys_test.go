package cluster

import (
	"context"
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// TestDiskMoveWithAnOldGateWarns: a gate stored by a provider before
// diskStorage was in healthGate.vm compares as no change, so the first
// update after the provider's upgrade moves the disks with no health check
// between nodes: the summary does not promise the checks and a warning
// says what to do (review s14b S2). A gate with the key keeps the promise.
func TestDiskMoveWithAnOldGateWarns(t *testing.T) {
	t.Parallel()
	inv, first := existingCluster(t, baseInputs())
	in := baseInputs()
	for _, h := range in["hosts"].([]any) {
		h.(map[string]any)["diskStorage"] = "fast"
	}
	for _, tc := range []struct {
		name    string
		oldGate func(urn string) bool // the applies whose stored gate lacks diskStorage
		summary string
		warning string
	}{
		{"gates stored with the key", func(string) bool { return false },
			"all 5 nodes updated live, no reboot (diskStorage local-lvm → fast; disks moved one node at a time, cluster health checked after each)", ""},
		{"every gate stored before the key", func(string) bool { return true },
			"all 5 nodes updated live, no reboot (diskStorage local-lvm → fast; disks moved one node at a time, with no health check in between " +
				"(stored health gates older than the provider; see the warning))",
			"lab-cp-1, lab-cp-2, lab-cp-3, lab-workers-1, lab-workers-2: the health gate stored for these nodes lacks diskStorage"},
		{"one gate stored before the key", func(urn string) bool { return strings.HasSuffix(urn, "::lab-workers-1") },
			"all 5 nodes updated live, no reboot (diskStorage local-lvm → fast; disks moved one node at a time, cluster health checked after each " +
				"except lab-workers-1 (stored health gate older than the provider; see the warning))",
			"lab-workers-1: the health gate stored for this node lacks diskStorage (written by an older provider), so the disk change goes " +
				"from node to node with no health check in between. Cancel, run pulumi up once without the disk change (it only records " +
				"the gates in the state; no node is touched), then make the change"},
	} {
		resp := previewWithStoredGates(t, inv, first, in, func(urn, vm string) string {
			if tc.oldGate(urn) {
				return strings.Split(vm, " diskStorage=")[0]
			}
			return vm
		})
		if s := resp.State.Get("summary").AsString(); s != tc.summary {
			t.Errorf("%s: summary %q\nwant    %q", tc.name, s, tc.summary)
		}
		warnings := strings.Join(strs(resp.State.Get("warnings")), "\n")
		if tc.warning == "" && strings.Contains(warnings, "health gate stored") ||
			tc.warning != "" && !strings.Contains(warnings, tc.warning) {
			t.Errorf("%s: warnings %q, want %q", tc.name, warnings, tc.warning)
		}
	}
}

// TestOSDiskGrowthWithAnOldGateWarns: a gate stored before diskSize was in
// healthGate.vm does not see the OS disk grow, so the summary does not
// promise the checks and the warning names the key.
func TestOSDiskGrowthWithAnOldGateWarns(t *testing.T) {
	t.Parallel()
	inv, first := existingCluster(t, baseInputs())
	in := baseInputs()
	in["workerPools"].([]any)[0].(map[string]any)["size"] = map[string]any{"diskSize": 30}
	resp := previewWithStoredGates(t, inv, first, in, func(_, vm string) string {
		return strings.Replace(vm, " diskSize=20GiB", "", 1)
	})
	want := "2 updated live, no reboot (diskSize 20 → 30 GiB; disks grown one node at a time, with no health check in between " +
		"(stored health gates older than the provider; see the warning)): lab-workers-1, lab-workers-2"
	if s := resp.State.Get("summary").AsString(); s != want {
		t.Errorf("summary %q\nwant    %q", s, want)
	}
	warning := "lab-workers-1, lab-workers-2: the health gate stored for these nodes lacks diskSize (written by an older provider)"
	if w := strings.Join(strs(resp.State.Get("warnings")), "\n"); !strings.Contains(w, warning) {
		t.Errorf("warnings %q, want %q", w, warning)
	}
}

// previewWithStoredGates previews in on the cluster first created, whose
// stack state holds each apply's healthGate.vm as edit(urn, vm) returns it.
func previewWithStoredGates(t *testing.T, inv Inventory, first *recorder, in map[string]any, edit func(urn, vm string) string) p.ConstructResponse {
	t.Helper()
	state := stackStateOf(first)
	for urn, r := range state {
		outs := r.(map[string]any)["outputs"].(map[string]any)
		if g, ok := outs["healthGate"].(map[string]any); ok {
			g["vm"] = edit(urn, g["vm"].(string))
		}
	}
	_, resp, err := constructWith(t, &Component{
		inventory:  func(context.Context) (Inventory, error) { return inv, nil },
		readConfig: appliedConfigs(first).read,
		extensions: labFactoryExtensions(t),
		stack:      func(*pulumi.Context) (map[string]any, error) { return state, nil },
		offline:    func() bool { return false },
	}, true, in)
	must(t, err)
	return resp
}
