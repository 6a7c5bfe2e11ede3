package talos

import (
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	simtalos "github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// A worker's changes wait for the cluster: an unhealthy cluster (a
// required control plane that does not answer) stops the update before the
// node is touched; a healthy one lets it through, and the check after the
// change sees the node. A VM restart alone checks again; when that check
// fails the state is left unverified, so the next update checks again. So
// does a move of the VM's disks, also when the stored gate predates the
// diskStorage key (a provider upgrade: no change by itself).
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

	// Nor when a required worker does not answer: the gate's workers reach
	// the update's wait, though the checked inputs (the state) do not keep
	// them (gate_lists.go).
	absent := ip(11)
	withAbsent := gate("cores=2", cp.String())
	withAbsent["healthGate"] = withKey(withAbsent["healthGate"], "workers", strs(worker.String(), absent.String()))

	checked, _ = w.diff(applyInputs(c, worker.String(), live, withAbsent))
	if checked.Get("healthGate").AsMap().Get("workers").IsArray() {
		t.Fatalf("checked inputs keep the gate's workers: %v", checked.Get("healthGate"))
	}

	err = w.update(checked)
	if err == nil || !strings.Contains(err.Error(), "node "+worker.String()+" was not changed: the cluster is not healthy") || !strings.Contains(err.Error(), absent.String()) {
		t.Fatalf("update with a required worker that does not answer: %v", err)
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

	// A provider upgrade adds the disk's storage to the gate: no VM change,
	// only the gate to record (TestGateKeysAddedUpdateOnlyTheState).
	checked, d = w.diff(applyInputs(c, worker.String(), live, gate("cores=4 diskStorage=local-lvm", cp.String())))
	if len(d.DetailedDiff) != 1 || d.DetailedDiff["healthGate.vm"].Kind != p.Update || checked.Get("configChange").IsString() {
		t.Fatalf("a key added to healthGate.vm: diff %v, configChange %v", d.DetailedDiff, checked.Get("configChange"))
	}

	// A provider before that update (built from main between the key and
	// it; no release) ran a `pulumi up` that found no change: it recorded
	// these inputs and kept the outputs (pulumi pkg resource/deploy/step.go
	// SameStep.Apply); the next Check gets these inputs as its old ones
	// (step_generator.go: OldInputs is old.Inputs; the harness's check
	// passes the state).
	w.inputs = checked

	// The VM's disks move to another storage, and the check after it fails:
	// the next node's VM would wait.
	resp, err := s.Check(p.CheckRequest{Urn: w.urn, State: w.inputs,
		Inputs: property.NewMap(applyInputs(c, worker.String(), live, gate("cores=4 diskStorage=fast", cp.String(), missing.String())))})
	if err != nil || len(resp.Failures) > 0 {
		t.Fatalf("check: %v %v", err, resp.Failures)
	}

	checked = resp.Inputs

	d, err = s.Diff(p.DiffRequest{ID: w.id, Urn: w.urn, State: w.state, OldInputs: w.inputs, Inputs: checked})
	if err != nil {
		t.Fatal(err)
	}

	if change := checked.Get("configChange"); !d.HasChanges || change.AsString() != "VM disks moved live, no reboot (diskStorage local-lvm → fast); health checked after" {
		t.Fatalf("disk move: diff %v, configChange %v", d.DetailedDiff, change)
	}

	// (An init error: the CLI shows its reasons; here that it failed and
	// left the state unverified.)
	if err := w.update(checked); err == nil || w.out("configDigest") != "" {
		t.Fatalf("disk move with an unhealthy cluster: %v (digest %q)", err, w.out("configDigest"))
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

// A node created with its cluster (healthGate.clusterCreate) is given its
// configuration without waiting for the required nodes, which come up with
// it: here a control plane configured before the first one is. The same
// create without clusterCreate waits for them and fails. Both nodes then
// come up with one bootstrap, as talosctl users bring a cluster up.
func TestClusterCreateDoesNotWaitForTheOthers(t *testing.T) {
	t.Parallel()

	sim := simtest.Start(t)
	ip := simtest.AddressBlock()
	cp1, cp2, cp3 := ip(2), ip(3), ip(4)
	simtest.Boot(sim, "cp1", cp1, "scsi0")
	simtest.Boot(sim, "cp2", cp2, "scsi0")
	simtest.Boot(sim, "cp3", cp3, "scsi0")

	c := newSimCluster(t, cp1)
	s := nodeServer(t, nil)
	gate := func(together bool, self string) map[string]property.Value {
		g := map[string]property.Value{
			"controlPlanes": property.New([]property.Value{property.New(cp1.String()), property.New(self)}),
			"vm":            property.New("cores=2"),
			"timeout":       property.New("2s"),
		}
		if together {
			g["clusterCreate"] = property.New(true)
		}

		return map[string]property.Value{"healthGate": property.New(g)}
	}
	cfg := c.config(talosconfig.RoleControlPlane, "/dev/sda", simtest.Version)

	err := newRes(t, s, "ConfigurationApply", "cp3").create(applyInputs(c, cp3.String(), cfg, gate(false, cp3.String())))
	if err == nil || !strings.Contains(err.Error(), "was not changed: the cluster is not healthy") {
		t.Fatalf("a create gated on a control plane that is not up: %v", err)
	}

	second := newRes(t, s, "ConfigurationApply", "cp2")
	if err := second.create(applyInputs(c, cp2.String(), cfg, gate(true, cp2.String()))); err != nil {
		t.Fatalf("created with the cluster: %v", err)
	}

	first := newRes(t, s, "ConfigurationApply", "cp1")
	if err := first.create(applyInputs(c, cp1.String(), cfg, gate(true, cp1.String()))); err != nil {
		t.Fatal(err)
	}

	if err := newRes(t, s, "Bootstrap", "bootstrap").create(map[string]property.Value{"node": property.New(cp1.String()), "clientConfiguration": c.clientValue()}); err != nil {
		t.Fatal(err)
	}

	for _, n := range []struct {
		addr string
		r    *res
	}{{cp1.String(), first}, {cp2.String(), second}} {
		if got := nodeDigest(t, c, n.addr); got == "" || got != n.r.out("configDigest") {
			t.Errorf("node %s runs %q, its state says %q", n.addr, got, n.r.out("configDigest"))
		}
	}
}

// A gate recorded by an older provider, without keys this one adds
// (review s14c S3): Diff reports an update, and the update records the gate
// without touching any node. Every Talos API call fails (lab faults) and
// the gate names a control plane that is not there, so an apply, a reboot
// or a health check would fail the update; it succeeds, the node's state
// as it was, and the next Diff finds nothing.
func TestGateKeysAddedUpdateOnlyTheState(t *testing.T) {
	t.Parallel()

	sim := simtest.Start(t)
	ip := simtest.AddressBlock()
	cp, missing := ip(2), ip(3)
	simtest.Boot(sim, "cp1", cp, "scsi0")

	c := newSimCluster(t, cp)
	s := nodeServer(t, nil)

	gate := func(vm string, cps ...string) map[string]property.Value {
		return map[string]property.Value{"healthGate": property.New(map[string]property.Value{
			"controlPlanes": strs(cps...), "vm": property.New(vm), "timeout": property.New("3s"),
		})}
	}

	apply := newRes(t, s, "ConfigurationApply", "cp1")
	cfg := c.config(talosconfig.RoleControlPlane, "/dev/sda", simtest.Version)

	if err := apply.create(applyInputs(c, cp.String(), cfg, gate("cores=2 diskStorage=local-lvm", cp.String()))); err != nil {
		t.Fatal(err)
	}

	digest := apply.out("configDigest")
	sim.SetFaults(simtalos.Faults{APIErrorRate: 1})

	const vm = "cores=2 diskStorage=local-lvm dataDisks="
	inputs := applyInputs(c, cp.String(), cfg, gate(vm, cp.String(), missing.String()))

	checked, d := apply.diff(inputs)
	if !d.HasChanges || len(d.DetailedDiff) != 1 || d.DetailedDiff["healthGate.vm"].Kind != p.Update || checked.Get("configChange").IsString() {
		t.Fatalf("stored gate without dataDisks: diff %v, configChange %v", d.DetailedDiff, checked.Get("configChange"))
	}

	if err := apply.update(checked); err != nil {
		t.Fatalf("the state-only update reached the node or the cluster: %v", err)
	}

	if got := apply.state.Get("healthGate").AsMap().Get("vm"); !got.IsString() || got.AsString() != vm || apply.out("configDigest") != digest {
		t.Fatalf("state after the update: gate %v, digest %q (was %q)", got, apply.out("configDigest"), digest)
	}

	if _, d := apply.diff(inputs); d.HasChanges {
		t.Fatalf("after the update: %v", d.DetailedDiff)
	}
}
