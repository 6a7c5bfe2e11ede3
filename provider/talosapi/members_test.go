package talosapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// Which nodes the cluster knows, read while a control plane is paused
// (issue 12's flake). Right after the pause, the lab's API server (real
// kube-apiserver on real etcd members) can hang on the paused member, so
// the Node objects are not read although the etcd members are: that
// answer lacks the workers and must come with an error, never as the full
// membership. And with the paused control plane asked first, the answer
// still comes from the others.
func TestReadMembersWithAPausedControlPlane(t *testing.T) {
	t.Parallel()

	s := simtest.Start(t)
	ip := simtest.AddressBlock()
	cp1, cp2, cp3, w := ip(2).String(), ip(3).String(), ip(4).String(), ip(5).String()

	simtest.Boot(s, "cp1", ip(2), "scsi0")
	paused := simtest.Boot(s, "cp2", ip(3), "scsi0")
	simtest.Boot(s, "cp3", ip(4), "scsi0")
	simtest.Boot(s, "w1", ip(5), "scsi0")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	o := simOptions(t)
	creds := adminCreds(t)

	for _, a := range []string{cp1, cp2, cp3} {
		if _, err := talosapi.Apply(ctx, talosapi.Target{Node: a, Creds: creds}, talosapi.ApplyRequest{Config: nodeConfig(t, talosconfig.RoleControlPlane, ip(2), "/dev/sda", simtest.Version)}, o); err != nil {
			t.Fatal(err)
		}
	}

	if _, err := talosapi.Apply(ctx, talosapi.Target{Node: w, Creds: creds}, talosapi.ApplyRequest{Config: nodeConfig(t, talosconfig.RoleWorker, ip(2), "/dev/sda", simtest.Version)}, o); err != nil {
		t.Fatal(err)
	}

	if _, err := talosapi.Bootstrap(ctx, talosapi.Target{Node: cp1, Creds: creds}, o); err != nil {
		t.Fatal(err)
	}

	if _, err := talosapi.WaitHealthy(ctx, talosapi.HealthRequest{ControlPlanes: []string{cp1, cp2, cp3}, Workers: []string{w}, Creds: creds, KubeconfigFrom: []string{cp1}}, o); err != nil {
		t.Fatal(err)
	}

	paused.Pause()
	defer paused.Resume()

	o.Progress = nil

	// Every answer is the whole membership, or an error.
	for i := range 5 {
		m, err := talosapi.ReadMembers(ctx, []string{cp1, cp3}, creds, o, 5*time.Second)
		t.Logf("read %d after the pause: %v, %v", i, m, err)

		if err == nil && (m["w1"] != w || m["cp1"] != cp1 || m["cp2"] != cp2 || m["cp3"] != cp3) {
			t.Errorf("read %d: %v without an error, want every node with its address", i, m)
		}
	}

	// The paused control plane first: the answer comes through the
	// others. (That the next one is asked before the paused one has used
	// its perCP is TestReadMembersHedgesPastAHangingControlPlane's, on a
	// clock the test moves; here no deadline but the test's own.)
	m, err := talosapi.ReadMembers(ctx, []string{cp2, cp1, cp3}, creds, o, 40*time.Second)
	if err != nil || m["w1"] != w {
		t.Errorf("asking the paused control plane first: %v, %v; want the members through the others", m, err)
	}
}
