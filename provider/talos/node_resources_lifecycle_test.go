package talos

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// settableClock is a clock tests move forward.
type settableClock struct{ t time.Time }

func (c *settableClock) now() time.Time { return c.t }

func TestDriftRefreshAndMaintenanceDrop(t *testing.T) {
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

	// Someone applies another configuration with talosctl.
	creds, err := c.client.credentials()
	if err != nil {
		t.Fatal(err)
	}

	other := c.config(talosconfig.RoleControlPlane, "/dev/sda", simtest.Version, "machine:\n  nodeLabels:\n    changed: by-hand\n")
	if _, err := talosapi.Apply(context.Background(), talosapi.Target{Node: cp.String(), Creds: creds}, talosapi.ApplyRequest{Config: []byte(other)}, fastOpts); err != nil {
		t.Fatal(err)
	}

	rd, err := apply.read()
	if err != nil {
		t.Fatal(err)
	}

	if rd.Properties.Get("configDigest").AsString() == apply.out("configDigest") {
		t.Fatal("refresh did not notice the configuration applied by hand")
	}

	apply.state = rd.Properties

	// The program still wants cfg: the diff names the drifted path and the
	// update puts the node back.
	checked, d := apply.diff(applyInputs(c, cp.String(), cfg, nil))
	if _, ok := d.DetailedDiff[`configView["machine.nodeLabels.changed"]`]; !ok || !d.HasChanges {
		t.Fatalf("diff after drift = %+v", d.DetailedDiff)
	}

	if err := apply.update(checked); err != nil {
		t.Fatal(err)
	}

	nc, _, _, err := talosapi.ReadConfig(context.Background(), talosapi.Target{Node: cp.String(), Creds: creds}, fastOpts)
	if err != nil {
		t.Fatal(err)
	}

	if want, _ := talosapi.ConfigDigest([]byte(cfg)); nc.ActiveDigest != want {
		t.Fatal("update did not restore the configuration")
	}

	// The node is reset by hand and comes back in maintenance mode: refresh
	// drops the resource so that the next up applies the configuration again.
	if _, err := talosapi.Reset(context.Background(), talosapi.Target{Node: cp.String(), Creds: creds}, talosapi.ResetRequest{Reboot: true}, fastOpts); err != nil {
		t.Fatal(err)
	}

	rd, err = apply.read()
	if err != nil || rd.ID != "" {
		t.Fatalf("refresh of a node in maintenance mode: id %q, %v", rd.ID, err)
	}
}

func TestWorkerBeforeBootstrapThenHealthAndKubeconfigRenewal(t *testing.T) {
	t.Parallel()

	sim := simtest.Start(t)
	ip := simtest.AddressBlock()
	cp, worker := ip(2), ip(10)
	simtest.Boot(sim, "cp1", cp, "scsi0")
	simtest.Boot(sim, "w1", worker, "virtio0")

	c := newSimCluster(t, cp)
	clock := &settableClock{t: time.Now()}
	s := nodeServer(t, clock.now)

	cpApply := newRes(t, s, "ConfigurationApply", "cp1")
	if err := cpApply.create(applyInputs(c, cp.String(), c.config(talosconfig.RoleControlPlane, "/dev/sda", simtest.Version), nil)); err != nil {
		t.Fatal(err)
	}

	// The worker installs before etcd is bootstrapped: its Talos API cannot
	// answer yet (no certificate from trustd), so only the install is awaited.
	wApply := newRes(t, s, "ConfigurationApply", "w1")
	if err := wApply.create(applyInputs(c, worker.String(), c.config(talosconfig.RoleWorker, "/dev/vda", simtest.Version), nil)); err != nil {
		t.Fatal(err)
	}

	if wApply.out("appliedMode") != "install" || wApply.out("runningVersion") != simtest.Version {
		t.Fatalf("worker state: %q %q", wApply.out("appliedMode"), wApply.out("runningVersion"))
	}

	boot := newRes(t, s, "Bootstrap", "bootstrap")
	if err := boot.create(map[string]property.Value{"node": property.New(cp.String()), "clientConfiguration": c.clientValue()}); err != nil {
		t.Fatal(err)
	}

	// Changing the bootstrap node later bootstraps nothing.
	checked, d := boot.diff(map[string]property.Value{"node": property.New(worker.String()), "clientConfiguration": c.clientValue()})
	if !d.HasChanges {
		t.Fatal("node change not reported")
	}

	if err := boot.update(checked); err != nil || boot.out("outcome") != "bootstrapped" {
		t.Fatalf("bootstrap update: %v, outcome %q", err, boot.out("outcome"))
	}

	kc := newRes(t, s, "Kubeconfig", "kubeconfig")
	if err := kc.create(map[string]property.Value{"node": property.New(cp.String()), "clientConfiguration": c.clientValue()}); err != nil {
		t.Fatal(err)
	}

	expires, err := time.Parse(time.RFC3339, kc.out("expiresAt"))
	if err != nil || kc.out("server") != "https://"+cp.String()+":6443" || !strings.Contains(kc.out("kubeconfig"), "client-certificate-data") {
		t.Fatalf("kubeconfig: expires %q (%v), server %q", kc.out("expiresAt"), err, kc.out("server"))
	}

	health := newRes(t, s, "ClusterHealth", "health")
	healthIn := map[string]property.Value{
		"controlPlanes":       property.New([]property.Value{property.New(cp.String())}),
		"workers":             property.New([]property.Value{property.New(worker.String())}),
		"clientConfiguration": c.clientValue(),
		"kubeconfig":          property.New(kc.out("kubeconfig")).WithSecret(true),
		"timeouts":            property.New(map[string]property.Value{"create": property.New("2m"), "update": property.New("5s")}),
	}

	if err := health.create(healthIn); err != nil {
		t.Fatal(err)
	}

	if nodes := health.state.Get("nodes"); !nodes.IsMap() || nodes.AsMap().Len() != 2 {
		t.Fatalf("health nodes = %v", nodes)
	}

	// The worker now answers over mTLS: an update with the same inputs
	// verifies it and changes nothing.
	_, d = wApply.diff(applyInputs(c, worker.String(), c.config(talosconfig.RoleWorker, "/dev/vda", simtest.Version), nil))
	if d.HasChanges {
		t.Fatalf("worker diff = %+v", d.DetailedDiff)
	}

	// A worker that does not exist: health times out naming it.
	healthIn["workers"] = property.New([]property.Value{property.New(worker.String()), property.New(ip(11).String())})

	checked, d = health.diff(healthIn)
	if !d.HasChanges {
		t.Fatal("workers change not reported")
	}

	// The update timeout (5s) ends the wait, not the create timeout (2m):
	// the provider reports how long it waited, at least about 5s and under a
	// minute (room for a loaded machine, yet short of 2m).
	err = health.update(checked)
	if err == nil || !strings.Contains(err.Error(), ip(11).String()) {
		t.Fatalf("health with a missing worker: %v", err)
	}

	if m := regexp.MustCompile(`timed out after ([0-9][0-9.hms]*)`).FindStringSubmatch(err.Error()); m == nil {
		t.Errorf("health with a missing worker does not say how long it waited: %v", err)
	} else if waited, perr := time.ParseDuration(m[1]); perr != nil || waited < 4500*time.Millisecond || waited >= time.Minute {
		t.Errorf("health with a missing worker waited %s, want the update timeout 5s (not the create timeout 2m): %v", m[1], err)
	}

	// Renewal: nothing to do now; a month before expiry a new kubeconfig.
	if _, d := kc.diff(map[string]property.Value{"node": property.New(cp.String()), "clientConfiguration": c.clientValue()}); d.HasChanges {
		t.Fatalf("fresh kubeconfig diff = %+v", d.DetailedDiff)
	}

	clock.t = expires.Add(-24 * time.Hour)
	old := kc.out("kubeconfig")

	checked, d = kc.diff(map[string]property.Value{"node": property.New(cp.String()), "clientConfiguration": c.clientValue()})
	if _, ok := d.DetailedDiff["expiresAt"]; !ok {
		t.Fatalf("renewal not due: %+v", d.DetailedDiff)
	}

	if err := kc.update(checked); err != nil {
		t.Fatal(err)
	}

	if kc.out("kubeconfig") == old {
		t.Fatal("renewal kept the old kubeconfig")
	}

	// Pointing it at another endpoint rewrites the server, nothing else.
	clock.t = time.Now()
	before := kc.out("kubeconfig")

	checked, _ = kc.diff(map[string]property.Value{"node": property.New(cp.String()), "clientConfiguration": c.clientValue(), "kubernetesEndpoint": property.New("10.5.0.10")})
	if err := kc.update(checked); err != nil {
		t.Fatal(err)
	}

	a, errA := talosapi.ParseKubeconfig([]byte(before))
	b, errB := talosapi.ParseKubeconfig([]byte(kc.out("kubeconfig")))

	if errA != nil || errB != nil || kc.out("server") != "https://10.5.0.10:6443" || b.Server != kc.out("server") {
		t.Fatalf("server %q (%v, %v)", kc.out("server"), errA, errB)
	}

	if string(a.ClientCert) != string(b.ClientCert) || string(a.ClientKey) != string(b.ClientKey) || string(a.CA) != string(b.CA) || a.ClusterName != b.ClusterName {
		t.Fatal("rewriting the server changed the credentials")
	}
}

// A node that accepted its configuration but never comes back: the create
// fails after the timeout and keeps the resource in the state (an init
// error), so the next up continues with an update instead of forgetting a
// configured node.
func TestCreateThatFailsAfterTheNodeChangedKeepsState(t *testing.T) {
	t.Parallel()

	sim := simtest.Start(t)
	ip := simtest.AddressBlock()
	cp := ip(2)
	simtest.Boot(sim, "cp1", cp, "scsi0")

	c := newSimCluster(t, cp)
	s := nodeServer(t, nil)

	// A by-id install disk is not checked against the node's disk list (Talos
	// resolves it), and this one does not exist: the node never comes up.
	cfg := c.config(talosconfig.RoleControlPlane, "/dev/disk/by-id/does-not-exist", simtest.Version)

	in := applyInputs(c, cp.String(), cfg, nil)
	in["timeouts"] = property.New(map[string]property.Value{"create": property.New("2s")})

	apply := newRes(t, s, "ConfigurationApply", "cp1")

	err := apply.create(in)
	if err == nil {
		t.Fatal("create succeeded for a node without its install disk")
	}

	t.Logf("create error: %v", err)

	// The state says the node was installed but not seen running: the next
	// update goes back to the node.
	if apply.id == "" || apply.out("appliedMode") != "install" || apply.out("configDigest") != "" {
		t.Fatalf("create error %v left no state to resume from (id %q, digest %q)", err, apply.id, apply.out("configDigest"))
	}

	_, d := apply.diff(in)
	if !d.HasChanges {
		t.Fatal("an unfinished create shows no change")
	}
}

// An update that changes nothing on the node (here: a renewed client
// certificate) does not contact it: it may be powered off.
func TestCredentialRotationDoesNotNeedTheNode(t *testing.T) {
	t.Parallel()

	sim := simtest.Start(t)
	ip := simtest.AddressBlock()
	cp := ip(2)
	node := simtest.Boot(sim, "cp1", cp, "scsi0")

	c := newSimCluster(t, cp)
	s := nodeServer(t, nil)

	cfg := c.config(talosconfig.RoleControlPlane, "/dev/sda", simtest.Version)
	apply := newRes(t, s, "ConfigurationApply", "cp1")

	if err := apply.create(applyInputs(c, cp.String(), cfg, nil)); err != nil {
		t.Fatal(err)
	}

	node.PowerOff()

	renewed := newSimCluster(t, cp) // a new admin certificate from the same CA

	checked, d := apply.diff(applyInputs(renewed, cp.String(), cfg, nil))
	if _, ok := d.DetailedDiff["clientConfiguration"]; !ok || len(d.DetailedDiff) != 1 {
		t.Fatalf("diff = %+v", d.DetailedDiff)
	}

	if err := apply.update(checked); err != nil {
		t.Fatalf("update with the node off: %v", err)
	}
}
