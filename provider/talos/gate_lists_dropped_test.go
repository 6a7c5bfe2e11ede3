package talos

import (
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

// ignoreChanges copies healthGate or vmIds from the old inputs, which keep
// only gateLists: Check fails on the field instead of letting the gate
// check fewer nodes; inputs that pass the lists (empty ones too: a
// cluster whose workers are all removed) pass.
func TestGateListsDroppedByIgnoreChangesFailCheck(t *testing.T) {
	t.Parallel()

	cfg := newSimCluster(t, netip.MustParseAddr("10.0.0.10"))
	s := nodeServer(t, nil)
	c := gateCases()[1] // 2 workers, 1 other node, 5 VMIDs

	for _, typ := range []string{"ConfigurationApply", "ControlPlaneComponents"} {
		in := c.inputs(cfg)
		if typ == "ControlPlaneComponents" {
			in = map[string]property.Value{"node": in["node"], "endpoints": in["endpoints"], "clientConfiguration": in["clientConfiguration"],
				"kubernetesVersion": property.New("v1.35.2"), "healthGate": in["healthGate"], "vmIds": in["vmIds"]}
		}

		old := newRes(t, s, typ, "w").check(in)
		noLists := withKey(withKey(in["healthGate"], "workers", property.New([]property.Value{})), "otherNodes", property.New([]property.Value{}))

		for name, tc := range map[string]struct {
			set   func(in map[string]property.Value)
			fails []string
		}{
			`["healthGate"]`: {func(in map[string]property.Value) { in["healthGate"] = old.Get("healthGate") },
				[]string{"healthGate.otherNodes", "healthGate.workers"}},
			`["vmIds"]`:               {func(in map[string]property.Value) { in["vmIds"] = old.Get("vmIds") }, []string{"vmIds"}},
			"none":                    {func(map[string]property.Value) {}, nil},
			"lists emptied":           {func(in map[string]property.Value) { in["healthGate"] = noLists }, nil},
			"lists unknown (preview)": {func(in map[string]property.Value) { in["vmIds"] = property.New(property.Computed) }, nil},
			// TalosCluster's preview of a node created again (its VM gone)
			"otherNodes unknown (preview of a new VM)": {func(in map[string]property.Value) {
				in["healthGate"] = withKey(in["healthGate"], "otherNodes", property.New(property.Computed))
				in["vmIds"] = property.New(property.Computed)
			}, nil},
		} {
			t.Run(typ+" "+name, func(t *testing.T) {
				news := maps.Clone(in)
				tc.set(news)

				resp, err := s.Check(p.CheckRequest{Urn: newRes(t, s, typ, "w").urn, State: old, Inputs: property.NewMap(news)})
				if err != nil {
					t.Fatal(err)
				}

				var got []string
				for _, f := range resp.Failures {
					got = append(got, f.Property)
					if !strings.Contains(f.Reason, "ignoreChanges cannot keep these lists") || !strings.Contains(f.Reason, c.node) {
						t.Errorf("%s: %s", f.Property, f.Reason)
					}
				}

				if slices.Sort(got); !slices.Equal(got, tc.fails) {
					t.Errorf("failures on %v, want %v: %+v", got, tc.fails, resp.Failures)
				}
			})
		}
	}
}

// Review s10 closing note, item 5: the schema's description of gateLists
// said ignoreChanges keeps nothing, not that Check then fails and what to
// do (droppedLists).
func TestGateListsDocSaysCheckFailsOnDroppedLists(t *testing.T) {
	t.Parallel()

	for _, want := range []string{"ignoreChanges", "Check fails", "pass the lists explicitly", "an empty list"} {
		if !strings.Contains(gateListsDoc, want) {
			t.Errorf("gateLists' description does not say %q: %s", want, gateListsDoc)
		}
	}
}
