package talos

import (
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	simtalos "github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// The apply's state keeps no clientConfiguration (StateCopies). A state
// written before, which holds it, shows no change, loses it in a refresh
// and is destroyed (the node reset) like a new one: every operation reaches
// the node with the credentials of the inputs the engine sends.
func TestApplyStateWithTheClientConfigurationCopy(t *testing.T) {
	t.Parallel()

	sim := simtest.Start(t)
	cp := simtest.AddressBlock()(2)
	simtest.Boot(sim, "cp1", cp, "scsi0")

	c := newSimCluster(t, cp)
	s := nodeServer(t, nil)
	apply := newRes(t, s, "ConfigurationApply", "cp1")
	cfg := c.config(talosconfig.RoleControlPlane, "/dev/sda", simtest.Version)
	in := applyInputs(c, cp.String(), cfg, map[string]property.Value{
		"reset": property.New(map[string]property.Value{"enabled": property.New(true)}),
	})

	if err := apply.create(in); err != nil {
		t.Fatal(err)
	}
	if _, ok := apply.state.GetOk("clientConfiguration"); ok {
		t.Fatal("the created state keeps clientConfiguration")
	}

	// The state as the previous version wrote it.
	apply.state = apply.state.Set("clientConfiguration", c.clientValue())

	if _, d := apply.diff(in); d.HasChanges {
		t.Fatalf("a state with the copy shows changes: %+v", d.DetailedDiff)
	}

	rd, err := apply.read()
	if err != nil || rd.ID == "" {
		t.Fatalf("refresh: id %q, %v", rd.ID, err)
	}
	if _, ok := rd.Properties.GetOk("clientConfiguration"); ok || rd.Properties.Get("configDigest").AsString() != apply.out("configDigest") {
		t.Fatalf("refreshed state: %v", rd.Properties)
	}
	if v := rd.Inputs.Get("clientConfiguration"); !v.IsMap() || !v.Secret() {
		t.Fatalf("the refresh dropped clientConfiguration from the inputs: %v", v)
	}

	// Destroyed from the state with the copy, its reset reaches the node.
	if err := apply.delete(); err != nil {
		t.Fatalf("delete with reset: %v", err)
	}
	deadline := time.Now().Add(time.Minute) // a guard against hanging, not a speed check
	for n := sim.Node(cp); n != nil && n.Status().Phase != simtalos.PhaseOff; n = sim.Node(cp) {
		if time.Now().After(deadline) {
			t.Fatalf("node still not off a minute after the reset (a hang guard): %+v", n.Status())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
