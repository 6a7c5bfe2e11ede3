package talosapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// A reset leaves the Node object behind; RemoveKubernetesNode deletes it
// through a control plane that answers, skipping the node itself and
// control planes that do not, and only when the object is that machine's.
func TestRemoveKubernetesNodeAfterReset(t *testing.T) {
	t.Parallel()

	s := simtest.Start(t)
	ip := simtest.AddressBlock()
	cp, worker, gone := ip(2).String(), ip(10).String(), ip(99).String()

	simtest.Boot(s, "cp1", ip(2), "scsi0")
	simtest.Boot(s, "w1", ip(10), "virtio0")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	o := simOptions(t)
	creds := adminCreds(t)

	for node, cfg := range map[string][]byte{
		cp:     nodeConfig(t, talosconfig.RoleControlPlane, ip(2), "/dev/sda", simtest.Version),
		worker: nodeConfig(t, talosconfig.RoleWorker, ip(2), "/dev/vda", simtest.Version),
	} {
		if _, err := talosapi.Apply(ctx, talosapi.Target{Node: node, Creds: creds}, talosapi.ApplyRequest{Config: cfg}, o); err != nil {
			t.Fatal(err)
		}
	}

	if _, err := talosapi.Bootstrap(ctx, talosapi.Target{Node: cp, Creds: creds}, o); err != nil {
		t.Fatal(err)
	}

	kc, err := talosapi.FetchKubeconfig(ctx, talosapi.Target{Node: cp, Creds: creds}, "", o)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := talosapi.WaitHealthy(ctx, talosapi.HealthRequest{ControlPlanes: []string{cp}, Workers: []string{worker}, Creds: creds, Kubeconfig: kc.Raw}, o); err != nil {
		t.Fatal(err)
	}

	name, err := talosapi.ReadNodename(ctx, talosapi.Target{Node: worker, Creds: creds}, o)
	if err != nil || name != "w1" {
		t.Fatalf("ReadNodename = %q, %v; want w1", name, err)
	}

	cpName, err := talosapi.ReadNodename(ctx, talosapi.Target{Node: cp, Creds: creds}, o)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := talosapi.Reset(ctx, talosapi.Target{Node: worker, Creds: creds}, talosapi.ResetRequest{Graceful: true}, o); err != nil {
		t.Fatal(err)
	}

	// The Node object of another machine is never deleted.
	res, err := talosapi.RemoveKubernetesNode(ctx, talosapi.RemoveNodeRequest{Name: cpName, Address: worker, ControlPlanes: []string{cp}, Creds: creds}, o)
	if err != nil || res.Deleted || !res.Found || !strings.Contains(res.Skipped, "another machine registered under this name") {
		t.Fatalf("remove %s for address %s = %+v, %v: want it kept", cpName, worker, res, err)
	}

	// The worker itself and an address that does not answer are passed over.
	req := talosapi.RemoveNodeRequest{
		Name: name, Address: worker, ControlPlanes: []string{worker, gone, cp}, Creds: creds, PerControlPlane: 2 * time.Second,
	}

	res, err = talosapi.RemoveKubernetesNode(ctx, req, o)
	if err != nil {
		t.Fatal(err)
	}

	// The graceful reset cordoned it (Talos drains before it resets).
	want := talosapi.RemoveNodeResult{Deleted: true, Found: true, Cordoned: true, Ready: false, Via: cp}
	if res != want {
		t.Fatalf("remove = %+v, want %+v", res, want)
	}

	// Gone: nothing to do the second time.
	res, err = talosapi.RemoveKubernetesNode(ctx, req, o)
	if err != nil || res.Found || res.Deleted {
		t.Fatalf("second remove = %+v, %v", res, err)
	}

	// No control plane answering is an error that says what each said.
	_, err = talosapi.RemoveKubernetesNode(ctx, talosapi.RemoveNodeRequest{Name: name, Address: worker, ControlPlanes: []string{gone}, Creds: creds, PerControlPlane: time.Second}, o)
	if err == nil || !strings.Contains(err.Error(), "no control plane's Kubernetes API answered ("+gone) {
		t.Fatalf("remove through %s only: %v", gone, err)
	}
}
