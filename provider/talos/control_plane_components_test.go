package talos

import (
	"context"
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

func componentsInputs(c *simCluster, node, version string) map[string]property.Value {
	return map[string]property.Value{
		"node":                property.New(node),
		"clientConfiguration": c.clientValue(),
		"kubernetesVersion":   property.New(version),
		"timeouts":            property.New(map[string]property.Value{"create": property.New("30s"), "update": property.New("30s")}),
	}
}

func TestControlPlaneComponentsLifecycle(t *testing.T) {
	t.Parallel()

	sim := simtest.Start(t)
	ip := simtest.AddressBlock()
	cp := ip(2)
	simtest.Boot(sim, "cp1", cp, "scsi0")

	c := newSimCluster(t, cp)
	s := nodeServer(t, nil)

	// A node in maintenance mode (a new cluster) is left alone.
	fresh := newRes(t, s, "ControlPlaneComponents", "fresh")
	if err := fresh.create(componentsInputs(c, cp.String(), "v1.34.1")); err != nil {
		t.Fatal(err)
	}

	if fresh.out("outcome") != componentsNotConfigured || sim.Node(cp).Status().Configured {
		t.Fatalf("maintenance node: outcome %q, configured %v", fresh.out("outcome"), sim.Node(cp).Status().Configured)
	}

	res, err := talosconfig.Generate(talosconfig.Input{
		ClusterName: "lab", Endpoint: "https://" + cp.String() + ":6443", Role: talosconfig.RoleControlPlane,
		Secrets: c.bundle, TalosVersion: simtest.Version, InstallDisk: "/dev/sda", InstallImage: simtest.Installer(simtest.Version),
		KubernetesVersion: "1.34.1",
	})
	if err != nil {
		t.Fatal(err)
	}

	apply := newRes(t, s, "ConfigurationApply", "cp1")
	if err := apply.create(applyInputs(c, cp.String(), res.Config, nil)); err != nil {
		t.Fatal(err)
	}

	boot := newRes(t, s, "Bootstrap", "bootstrap")
	if err := boot.create(map[string]property.Value{"node": property.New(cp.String()), "clientConfiguration": c.clientValue()}); err != nil {
		t.Fatal(err)
	}

	// Already on the version: nothing to do.
	st := newRes(t, s, "ControlPlaneComponents", "cp1")
	if err := st.create(componentsInputs(c, cp.String(), "v1.34.1")); err != nil {
		t.Fatal(err)
	}

	if st.out("outcome") != componentsCurrent {
		t.Fatalf("outcome %q, want %q", st.out("outcome"), componentsCurrent)
	}

	// Only kubernetesVersion is a change; a renewed client certificate or
	// another timeout is not.
	other := componentsInputs(c, cp.String(), "1.34.1")
	other["timeouts"] = property.New(map[string]property.Value{"update": property.New("1m")})
	if _, d := st.diff(other); d.HasChanges {
		t.Fatalf("same version: diff %+v", d.DetailedDiff)
	}

	checked, d := st.diff(componentsInputs(c, cp.String(), "v1.35.2"))
	if !d.HasChanges || len(d.DetailedDiff) != 2 || d.DetailedDiff["kubernetesVersion"].Kind != p.Update || d.DetailedDiff["change"].Kind != p.Add {
		t.Fatalf("version bump diff %+v", d.DetailedDiff)
	}

	if got := checked.Get("change").AsString(); got != "control plane components v1.34.1 → v1.35.2, kubelet later" {
		t.Fatalf("change line %q", got)
	}

	bootsBefore := sim.Node(cp).Status().Boots
	if err := st.update(checked); err != nil {
		t.Fatal(err)
	}

	if st.out("outcome") != componentsUpdated || st.state.Get("change").IsString() {
		t.Fatalf("after update: outcome %q change %v", st.out("outcome"), st.state.Get("change"))
	}

	target, err := nodeTarget(cp.String(), nil, c.client)
	if err != nil {
		t.Fatal(err)
	}

	nc, _, _, err := talosapi.ReadConfig(context.Background(), target, fastOpts)
	if err != nil {
		t.Fatal(err)
	}

	cfg, err := configloader.NewFromBytes(nc.Active)
	if err != nil {
		t.Fatal(err)
	}

	if !strings.HasSuffix(cfg.Cluster().APIServer().Image(), ":v1.35.2") || !strings.HasSuffix(cfg.Machine().Kubelet().Image(), ":v1.34.1") {
		t.Fatalf("node runs kube-apiserver %s, kubelet %s: want the components moved, the kubelet kept", cfg.Cluster().APIServer().Image(), cfg.Machine().Kubelet().Image())
	}

	if got := sim.Node(cp).Status().Boots; got != bootsBefore {
		t.Fatalf("the component change rebooted the node (%d -> %d boots)", bootsBefore, got)
	}

	// Refresh reports the state as it is; destroy leaves the node alone.
	rd, err := st.read()
	if err != nil || !rd.Properties.Equals(st.state) {
		t.Fatalf("read: %v, %v vs %v", err, rd.Properties, st.state)
	}

	// An update that changed the node and then failed (the cluster not seen
	// healthy after it: a required worker does not answer) stores no
	// outcome. The engine runs the next update whatever Diff says (init
	// errors), and the stack's outputs show that only so (StageUnchanged,
	// review s14b S1).
	failing := componentsInputs(c, cp.String(), "v1.35.3")
	failing["healthGate"] = property.New(map[string]property.Value{
		"controlPlanes": property.New([]property.Value{property.New(cp.String())}),
		"workers":       property.New([]property.Value{property.New(ip(3).String())}),
		"timeout":       property.New("3s"),
	})
	checked, _ = st.diff(failing)
	if err := st.update(checked); err == nil {
		t.Fatal("update with an unhealthy cluster after it succeeded")
	}

	if got := st.state.Get("outcome"); !got.IsString() || got.AsString() != "" || st.out("kubernetesVersion") != "v1.35.3" {
		t.Fatalf("after a failed check: outcome %v, version %q", got, st.out("kubernetesVersion"))
	}

	if err := st.delete(); err != nil {
		t.Fatal(err)
	}

	if !sim.Node(cp).Status().Configured {
		t.Fatal("delete touched the node")
	}

	if v := sim.SkewViolations(); len(v) != 0 {
		t.Fatalf("skew violations %v", v)
	}
}
