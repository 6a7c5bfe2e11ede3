package talos

import (
	"strings"
	"testing"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	simtalos "github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

func applyInputs(c *simCluster, node, cfg string, extra map[string]property.Value) map[string]property.Value {
	in := map[string]property.Value{
		"node":                 property.New(node),
		"clientConfiguration":  c.clientValue(),
		"machineConfiguration": property.New(cfg).WithSecret(true),
		"timeouts":             property.New(map[string]property.Value{"create": property.New("30s"), "update": property.New("30s"), "delete": property.New("30s")}),
	}

	for k, v := range extra {
		in[k] = v
	}

	return in
}

func TestConfigurationApplyLifecycle(t *testing.T) {
	t.Parallel()

	sim := simtest.Start(t)
	ip := simtest.AddressBlock()
	cp := ip(2)
	simtest.Boot(sim, "cp1", cp, "scsi0")

	c := newSimCluster(t, cp)
	s := nodeServer(t, nil)

	apply := newRes(t, s, "ConfigurationApply", "cp1")
	cfg := c.config(talosconfig.RoleControlPlane, "/dev/sda", simtest.Version)

	if err := apply.create(applyInputs(c, cp.String(), cfg, nil)); err != nil {
		t.Fatal(err)
	}

	if apply.out("appliedMode") != "install" || apply.out("runningVersion") != simtest.Version || apply.out("configDigest") == "" {
		t.Fatalf("state after create: mode %q version %q digest %q", apply.out("appliedMode"), apply.out("runningVersion"), apply.out("configDigest"))
	}

	// Bootstrap (etcd must run before a control plane can be upgraded).
	boot := newRes(t, s, "Bootstrap", "bootstrap")
	if err := boot.create(map[string]property.Value{"node": property.New(cp.String()), "clientConfiguration": c.clientValue()}); err != nil {
		t.Fatal(err)
	}

	if boot.out("outcome") != "bootstrapped" {
		t.Fatalf("bootstrap outcome %q", boot.out("outcome"))
	}

	// Same inputs: no diff.
	if _, d := apply.diff(applyInputs(c, cp.String(), cfg, nil)); d.HasChanges {
		t.Fatalf("unchanged inputs diff: %+v", d.DetailedDiff)
	}

	// Refresh: no drift.
	rd, err := apply.read()
	if err != nil || rd.ID == "" {
		t.Fatalf("read: %v (id %q)", err, rd.ID)
	}

	if rd.Properties.Get("configDigest").AsString() != apply.out("configDigest") {
		t.Fatal("read reports drift on an unchanged node")
	}

	// A live change: the diff names the path, the update applies it without a reboot.
	live := c.config(talosconfig.RoleControlPlane, "/dev/sda", simtest.Version, "machine:\n  kubelet:\n    extraArgs:\n      rotate-server-certificates: \"true\"\n")

	checked, d := apply.diff(applyInputs(c, cp.String(), live, nil))
	if _, ok := d.DetailedDiff[`configView["machine.kubelet.extraArgs.rotate-server-certificates"]`]; !ok || len(d.DetailedDiff) != 2 {
		t.Fatalf("diff = %+v", d.DetailedDiff)
	}

	if change := checked.Get("configChange"); !change.IsString() || change.AsString() != "live: 1 path, no reboot" {
		t.Fatalf("configChange = %v", change)
	}

	if err := apply.update(checked); err != nil {
		t.Fatal(err)
	}

	if apply.out("appliedMode") != "no-reboot" {
		t.Fatalf("appliedMode = %q, want no-reboot", apply.out("appliedMode"))
	}

	// Talos upgrade through the installer image tag: the node comes back on it.
	upgraded := c.config(talosconfig.RoleControlPlane, "/dev/sda", "v1.12.6", "machine:\n  kubelet:\n    extraArgs:\n      rotate-server-certificates: \"true\"\n")

	checked, d = apply.diff(applyInputs(c, cp.String(), upgraded, nil))
	if _, ok := d.DetailedDiff[`configView["machine.install.image"]`]; !ok {
		t.Fatalf("diff = %+v", d.DetailedDiff)
	}

	if err := apply.update(checked); err != nil {
		t.Fatal(err)
	}

	if apply.out("runningVersion") != "v1.12.6" || !strings.HasSuffix(apply.out("installedImage"), ":v1.12.6") {
		t.Fatalf("after upgrade: version %q image %q", apply.out("runningVersion"), apply.out("installedImage"))
	}

	// Delete with reset: the node leaves the cluster and powers off.
	yes := property.New(map[string]property.Value{"enabled": property.New(true)})

	checked, d = apply.diff(applyInputs(c, cp.String(), upgraded, map[string]property.Value{"reset": yes}))
	if d.DetailedDiff["reset"].Kind != p.Update {
		t.Fatalf("diff = %+v", d.DetailedDiff)
	}

	if err := apply.update(checked); err != nil {
		t.Fatal(err)
	}

	// The only control plane is the last etcd member: the graceful reset
	// falls back to a non-graceful one (a whole-cluster destroy ends here).
	if err := apply.delete(); err != nil {
		t.Fatalf("graceful reset of the last etcd member: %v", err)
	}

	// Delete returns once the node stopped serving; it then wipes its
	// disk and powers off.
	deadline := time.Now().Add(time.Minute) // a guard against hanging, not a speed check
	for n := sim.Node(cp); n != nil && n.Status().Phase != simtalos.PhaseOff; n = sim.Node(cp) {
		if time.Now().After(deadline) {
			t.Fatalf("node still not off a minute after reset (a hang guard): %+v", n.Status())
		}

		time.Sleep(10 * time.Millisecond)
	}
}
