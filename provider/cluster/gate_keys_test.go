package cluster

import (
	"context"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// TestDiskMoveWithAnOldGateWarns: a gate stored by a provider before
// diskStorage was in healthGate.vm compares as no change, so the first
// update after the provider's upgrade may move the disks with no health
// check between nodes: the summary does not promise the checks and a
// warning says what to do (review s14b S2). A gate with the key keeps the
// promise.
func TestDiskMoveWithAnOldGateWarns(t *testing.T) {
	t.Parallel()
	inv, first := existingCluster(t, baseInputs())
	in := baseInputs()
	for _, h := range in["hosts"].([]any) {
		h.(map[string]any)["diskStorage"] = "fast"
	}
	running := appliedConfigs(first)
	for _, tc := range []struct {
		name    string
		oldGate func(urn string) bool // the applies whose stored gate lacks diskStorage
		summary string
		warning string
	}{
		{"gates stored with the key", func(string) bool { return false },
			"all 5 nodes updated live, no reboot (diskStorage local-lvm → fast; disks moved one node at a time, cluster health checked after each)", ""},
		{"every gate stored before the key", func(string) bool { return true },
			"all 5 nodes updated live, no reboot (diskStorage local-lvm → fast; disks moved one node at a time, cluster health checked after each " +
				"only if pulumi up ran since the provider's upgrade (see the warning))",
			"lab-cp-1, lab-cp-2, lab-cp-3, lab-workers-1, lab-workers-2: the health gate stored for these nodes lacks diskStorage"},
		{"one gate stored before the key", func(urn string) bool { return strings.HasSuffix(urn, "::lab-workers-1") },
			"all 5 nodes updated live, no reboot (diskStorage local-lvm → fast; disks moved one node at a time, cluster health checked after each " +
				"but perhaps not after lab-workers-1 (see the warning))",
			"lab-workers-1: the health gate stored for this node lacks diskStorage (written by an older provider): unless a pulumi up ran"},
	} {
		state := stackStateOf(first)
		for urn, r := range state {
			outs := r.(map[string]any)["outputs"].(map[string]any)
			if g, ok := outs["healthGate"].(map[string]any); ok && tc.oldGate(urn) {
				g["vm"] = strings.Split(g["vm"].(string), " diskStorage=")[0]
			}
		}
		_, resp, err := constructWith(t, &Component{
			inventory:  func(context.Context) (Inventory, error) { return inv, nil },
			readConfig: running.read,
			extensions: labFactoryExtensions(t),
			stack:      func(*pulumi.Context) (map[string]any, error) { return state, nil },
			offline:    func() bool { return false },
		}, true, in)
		must(t, err)
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
