package cluster

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// Reading the nodes through the first control plane gives every node the
// reading it gets directly (readNodes): a configured worker its text and
// version, without a direct read of its own; a node in maintenance mode and
// an address where nothing answers are asked directly and read as before;
// a stopped VM is not asked.
func TestReadNodesThroughAControlPlaneReadsWhatTheNodesSay(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t)
	ip := simtest.AddressBlock()
	simtest.Boot(s, "cp1", ip(2), "scsi0")
	simtest.Boot(s, "w1", ip(10), "virtio0")
	simtest.Boot(s, "m1", ip(11), "virtio0")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bundle, err := talosconfig.NewSecrets(simtest.Version, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := talosconfig.NewAdminCertificate(bundle, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	creds := &talosapi.Credentials{CA: bundle.Certs.OS.Crt, Cert: cert.CertPEM, Key: cert.KeyPEM}
	for name, n := range map[string]struct {
		addr string
		role talosconfig.Role
		disk string
	}{"cp1": {ip(2).String(), talosconfig.RoleControlPlane, "/dev/sda"}, "w1": {ip(10).String(), talosconfig.RoleWorker, "/dev/vda"}} {
		res, err := talosconfig.Generate(talosconfig.Input{
			ClusterName: "lab", Endpoint: "https://" + ip(2).String() + ":6443", Role: n.role, Secrets: bundle,
			TalosVersion: simtest.Version, InstallDisk: n.disk, InstallImage: simtest.Installer(simtest.Version),
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := talosapi.Apply(ctx, talosapi.Target{Node: n.addr, Creds: creds},
			talosapi.ApplyRequest{Config: []byte(res.Config)}, talosapi.Options{PollMin: 5 * time.Millisecond}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}

	prev := &plan.State{Nodes: []plan.NodeState{
		{Name: "cp1", Role: plan.RoleControlPlane, Address: ip(2).String(), Power: plan.PowerRunning},
		{Name: "w1", Role: plan.RoleWorker, Address: ip(10).String(), Power: plan.PowerRunning},
		{Name: "m1", Role: plan.RoleWorker, Address: ip(11).String(), Power: plan.PowerRunning},
		{Name: "gone", Role: plan.RoleWorker, Address: ip(12).String(), Power: plan.PowerRunning},
		{Name: "off", Role: plan.RoleWorker, Address: ip(13).String(), Power: plan.PowerStopped},
	}}
	want := readNodes(ctx, prev, creds, readRunningConfig)
	var directly atomic.Int32
	got := readNodesThrough(ctx, prev, creds, func(ctx context.Context, node string, creds *talosapi.Credentials) (runningNode, error) {
		directly.Add(1)
		return readRunningConfig(ctx, node, creds)
	})

	if len(got) != len(want) || len(want) != 4 {
		t.Fatalf("readings of %d nodes, directly %d (want 4: the stopped VM is not asked)", len(got), len(want))
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok || g.running != w.running || (g.err == nil) != (w.err == nil) {
			t.Errorf("%s: read through the control plane %+v (%v), directly %+v (%v)", name, g.running, g.err, w.running, w.err)
		}
	}
	if w := want["w1"]; w.err != nil || w.running.Config == "" || w.running.TalosVersion == "" {
		t.Errorf("the worker's direct reading says nothing to compare: %+v %v", w.running, w.err)
	}
	if want["m1"].err != nil || want["m1"].running.Config != "" || want["gone"].err == nil {
		t.Errorf("maintenance node %+v (%v), silent address %v: not what the test expects", want["m1"].running, want["m1"].err, want["gone"].err)
	}
	if n := directly.Load(); n != 2 {
		t.Errorf("%d nodes asked directly besides the control plane read through, want 2 (the maintenance node and the silent address)", n)
	}
}
