package talos

import (
	"context"
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// A VM replaced at the same address comes up fresh from the ISO: the apply
// is replaced (old one deleted first) and the new machine configured from
// maintenance mode, instead of the state claiming a configured node.
func TestNewMachineAtTheAddressIsConfiguredAgain(t *testing.T) {
	t.Parallel()

	sim := simtest.Start(t)
	cp := simtest.AddressBlock()(2)
	oldVM := simtest.Boot(sim, "cp1", cp, "scsi0")

	c := newSimCluster(t, cp)
	s := nodeServer(t, nil)
	cfg := c.config(talosconfig.RoleControlPlane, "/dev/sda", simtest.Version)
	reset := property.New(map[string]property.Value{"enabled": property.New(true)})

	apply := newRes(t, s, "ConfigurationApply", "cp1")
	if err := apply.create(applyInputs(c, cp.String(), cfg, map[string]property.Value{"machineId": property.New("uuid-1"), "reset": reset})); err != nil {
		t.Fatal(err)
	}

	// Same machine (the UUID in another case): nothing to do.
	if _, d := apply.diff(applyInputs(c, cp.String(), cfg, map[string]property.Value{"machineId": property.New("UUID-1"), "reset": reset})); d.HasChanges {
		t.Fatalf("same machine: %+v", d.DetailedDiff)
	}

	// An unknown UUID (a VM updated in place, in preview) is no new machine.
	if _, d := apply.diff(applyInputs(c, cp.String(), cfg, map[string]property.Value{"machineId": property.New(property.Computed), "reset": reset})); d.HasChanges {
		t.Fatalf("unknown machineId: %+v", d.DetailedDiff)
	}

	oldVM.PowerOff()

	newVM := simtest.Boot(sim, "cp1", cp, "scsi0") // a new disk: boots the ISO into maintenance mode

	checked, d := apply.diff(applyInputs(c, cp.String(), cfg, map[string]property.Value{"machineId": property.New("uuid-2"), "reset": reset}))

	if d.DetailedDiff["machineId"].Kind != p.UpdateReplace || !d.DeleteBeforeReplace {
		t.Fatalf("new machineId: %+v (deleteBeforeReplace %v)", d.DetailedDiff, d.DeleteBeforeReplace)
	}

	if got := checked.Get("configChange"); !got.IsString() || !strings.Contains(got.AsString(), "another machine") {
		t.Fatalf("configChange = %v", got)
	}

	// Delete before replace: the reset finds a node in maintenance mode and
	// leaves it alone; the new resource installs it.
	if err := apply.delete(); err != nil {
		t.Fatalf("delete of the old apply: %v", err)
	}

	replacement := newRes(t, s, "ConfigurationApply", "cp1")
	if err := replacement.create(applyInputs(c, cp.String(), cfg, map[string]property.Value{"machineId": property.New("uuid-2"), "reset": reset})); err != nil {
		t.Fatal(err)
	}

	if st := newVM.Status(); !st.Configured || replacement.out("appliedMode") != "install" {
		t.Fatalf("new machine configured=%v, appliedMode %q", st.Configured, replacement.out("appliedMode"))
	}
}

// Setting machineId for the first time records it without the node (which
// may be off); removing it is no change.
func TestMachineIdFirstSetIsRecordedOnly(t *testing.T) {
	t.Parallel()

	cfg := testConfig(t, "v1.12.5")
	args := ConfigurationApplyArgs{Node: "10.5.0.2", MachineConfiguration: cfg}
	old := appliedState(t, args, "v1.12.5")

	next := withView(t, args)
	next.MachineId = ptrTo("uuid-1")

	d, _ := diffConfigurationApply(old, next)
	if d.DetailedDiff["machineId"].Kind != p.Update || d.DeleteBeforeReplace || !d.HasChanges || len(d.DetailedDiff) != 1 {
		t.Fatalf("first machineId: %+v", d.DetailedDiff)
	}

	if needsNode(old, next) {
		t.Fatal("recording machineId contacts the node")
	}

	old.MachineId = ptrTo("uuid-1")
	if d, _ := diffConfigurationApply(old, withView(t, args)); d.HasChanges {
		t.Fatalf("removed machineId: %+v", d.DetailedDiff)
	}

	// Check marks a new machine only when a recorded id changes.
	ca := &ConfigurationApply{}
	inputs := func(id property.Value) property.Map {
		m := map[string]property.Value{
			"node": property.New("10.5.0.2"), "machineConfiguration": property.New(cfg),
			"clientConfiguration": property.New(map[string]property.Value{
				"caCertificate": property.New("x"), "clientCertificate": property.New("y"), "clientKey": property.New("z"),
			}),
		}
		if id.IsString() || id.IsComputed() {
			m["machineId"] = id
		}

		return property.NewMap(m)
	}

	for _, tc := range []struct {
		name     string
		old, new property.Value
		want     bool
	}{
		{"first set", property.Value{}, property.New("uuid-1"), false},
		{"removed", property.New("uuid-1"), property.Value{}, false},
		{"same", property.New("uuid-1"), property.New("uuid-1"), false},
		{"changed", property.New("uuid-1"), property.New("uuid-2"), true},
		{"unknown", property.New("uuid-1"), property.New(property.Computed), false},
	} {
		resp, err := ca.Check(context.Background(), infer.CheckRequest{OldInputs: inputs(tc.old), NewInputs: inputs(tc.new)})
		if err != nil || len(resp.Failures) > 0 {
			t.Fatalf("%s: %v %v", tc.name, err, resp.Failures)
		}

		if got := deref(resp.Inputs.ConfigChange) == newMachineChange; got != tc.want {
			t.Errorf("%s: new machine = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
