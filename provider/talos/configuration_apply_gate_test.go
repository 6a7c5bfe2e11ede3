package talos

import (
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// A worker's changes wait for the cluster: an unhealthy cluster (a
// required control plane that does not answer) stops the update before the
// node is touched; a healthy one lets it through, and the check after the
// change sees the node. A VM restart alone checks again; when that check
// fails the state is left unverified, so the next update checks again.
func TestHealthGateBeforeAndAfter(t *testing.T) {
	t.Parallel()

	sim := simtest.Start(t)
	ip := simtest.AddressBlock()
	cp, worker, missing := ip(2), ip(10), ip(3)
	simtest.Boot(sim, "cp1", cp, "scsi0")
	simtest.Boot(sim, "w1", worker, "virtio0")

	c := newSimCluster(t, cp)
	s := nodeServer(t, nil)

	if err := newRes(t, s, "ConfigurationApply", "cp1").create(applyInputs(c, cp.String(), c.config(talosconfig.RoleControlPlane, "/dev/sda", simtest.Version), nil)); err != nil {
		t.Fatal(err)
	}

	if err := newRes(t, s, "Bootstrap", "bootstrap").create(map[string]property.Value{"node": property.New(cp.String()), "clientConfiguration": c.clientValue()}); err != nil {
		t.Fatal(err)
	}

	// The first gate waits for the cluster's real kube-apiserver to start;
	// the later ones, which expect a refusal, give up soon.
	timeout := "2m"
	gate := func(vm string, cps ...string) map[string]property.Value {
		var list []property.Value
		for _, a := range cps {
			list = append(list, property.New(a))
		}

		return map[string]property.Value{"healthGate": property.New(map[string]property.Value{
			"controlPlanes": property.New(list),
			"workers":       property.New([]property.Value{property.New(worker.String())}),
			"vm":            property.New(vm),
			"timeout":       property.New(timeout),
		})}
	}

	// Create: the control plane is healthy before the worker joins (the
	// check fetches its own kubeconfig from it).
	w := newRes(t, s, "ConfigurationApply", "w1")
	base := c.config(talosconfig.RoleWorker, "/dev/vda", simtest.Version)

	if err := w.create(applyInputs(c, worker.String(), base, gate("cores=2", cp.String()))); err != nil {
		t.Fatal(err)
	}

	timeout = "3s"
	digest := w.out("configDigest")
	live := c.config(talosconfig.RoleWorker, "/dev/vda", simtest.Version, "machine:\n  nodeLabels:\n    tier: web\n")

	// A required control plane that does not answer: the node is not touched.
	checked, _ := w.diff(applyInputs(c, worker.String(), live, gate("cores=2", cp.String(), missing.String())))

	err := w.update(checked)
	if err == nil || !strings.Contains(err.Error(), "node "+worker.String()+" was not changed: the cluster is not healthy") || !strings.Contains(err.Error(), missing.String()) {
		t.Fatalf("update with an unhealthy cluster: %v", err)
	}

	if running := nodeDigest(t, c, worker.String()); running != digest || w.out("configDigest") != digest {
		t.Fatalf("the node was changed (runs %s, state %s, before %s)", running, w.out("configDigest"), digest)
	}

	// Healthy: applied, and checked after.
	checked, _ = w.diff(applyInputs(c, worker.String(), live, gate("cores=2", cp.String())))
	if err := w.update(checked); err != nil {
		t.Fatal(err)
	}

	if w.out("appliedMode") != "no-reboot" || nodeDigest(t, c, worker.String()) != w.out("configDigest") {
		t.Fatalf("after the update: mode %q", w.out("appliedMode"))
	}

	// The VM restarted with more cores, and the check after it fails: the
	// state is left unverified.
	checked, d := w.diff(applyInputs(c, worker.String(), live, gate("cores=4", cp.String(), missing.String())))
	if change := checked.Get("configChange"); !d.HasChanges || change.AsString() != "reboot: VM restart (cores 2 → 4)" {
		t.Fatalf("VM restart: diff %v, configChange %v", d.DetailedDiff, change)
	}

	// (An init error: the CLI shows its reasons; here only that it failed.)
	if err := w.update(checked); err == nil {
		t.Fatal("VM restart with an unhealthy cluster succeeded")
	}

	if w.out("configDigest") != "" {
		t.Fatal("a failed check after the change left a verified state")
	}

	checked, d = w.diff(applyInputs(c, worker.String(), live, gate("cores=4", cp.String())))
	if !d.HasChanges {
		t.Fatal("no update to resume the unverified node")
	}

	if err := w.update(checked); err != nil || w.out("configDigest") == "" {
		t.Fatalf("resume: %v (digest %q)", err, w.out("configDigest"))
	}
}

// nodeDigest is the digest of the configuration the node runs.
func nodeDigest(t *testing.T, c *simCluster, node string) string {
	t.Helper()

	creds, err := c.client.credentials()
	if err != nil {
		t.Fatal(err)
	}

	nc, _, _, err := talosapi.ReadConfig(t.Context(), talosapi.Target{Node: node, Creds: creds}, fastOpts)
	if err != nil {
		t.Fatal(err)
	}

	return nc.ActiveDigest
}
