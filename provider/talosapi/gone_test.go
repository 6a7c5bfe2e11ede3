package talosapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// Destroying a cluster with a control plane down: the down node does not
// answer; the control plane that leaves before it removes its member first
// (etcd would refuse the leave: one running member of the two that stay),
// and the down node's member is then gone when its own removal asks.
func TestResetWithAControlPlaneDown(t *testing.T) {
	t.Parallel()

	lab := healthyControlPlanes(t, 3, 2*time.Minute)
	s, cps, ctx, o, creds, target := lab.sim, lab.cps, lab.ctx, lab.o, lab.creds, lab.target

	lab.nodes[1].PowerOff()

	if ok, err := talosapi.Answers(ctx, target(cps[1]), o, 2*time.Second); ok || err != nil {
		t.Fatalf("a powered-off node answers=%v err=%v", ok, err)
	}

	if ok, err := talosapi.Answers(ctx, target(cps[2]), o, 2*time.Second); !ok || err != nil {
		t.Fatalf("a running node answers=%v err=%v", ok, err)
	}

	res, err := talosapi.Reset(ctx, target(cps[2]), talosapi.ResetRequest{Graceful: true, ProbeMembers: 2 * time.Second}, o)
	if err != nil {
		t.Fatalf("graceful reset of cp3 with cp2 down: %v", err)
	}

	if len(res.Removed) != 1 || res.Removed[0].Hostname != "cp2" || res.Removed[0].Address != cps[1] {
		t.Fatalf("removed %+v, want cp2's member", res.Removed)
	}

	rm, err := talosapi.RemoveEtcdMember(ctx, cps[1], cps, creds, o, 10*time.Second)
	if err != nil || rm.Found || rm.Via != cps[0] {
		t.Fatalf("removing cp2's member through cp1 after cp3 left: %+v %v", rm, err)
	}

	// cp1 is the last member: etcd kept quorum throughout.
	if got := s.QuorumLosses(); len(got) != 0 {
		t.Errorf("quorum losses: %v", got)
	}

	c, err := talosapi.ConnectSecure(ctx, target(cps[0]), o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close() //nolint:errcheck

	list, err := c.Client().EtcdMemberList(ctx, &machine.EtcdMemberListRequest{})
	if err != nil || len(list.GetMessages()[0].GetMembers()) != 1 || list.GetMessages()[0].GetMembers()[0].GetHostname() != "cp1" {
		t.Fatalf("members after the destroy of cp3 and cp2: %v %v", list, err)
	}
}

// A control plane gone for good has its member removed through another.
func TestRemoveEtcdMemberOfAGoneControlPlane(t *testing.T) {
	t.Parallel()

	lab := healthyControlPlanes(t, 3, 2*time.Minute)
	cps, ctx, o, creds := lab.cps, lab.ctx, lab.o, lab.creds

	lab.nodes[2].PowerOff()

	// The node itself is skipped; the first other control plane removes it.
	rm, err := talosapi.RemoveEtcdMember(ctx, cps[2], []string{cps[2], cps[0]}, creds, o, 10*time.Second)
	if err != nil || !rm.Found || rm.Hostname != "cp3" || rm.Via != cps[0] {
		t.Fatalf("removal: %+v %v", rm, err)
	}

	if _, err := talosapi.WaitHealthy(ctx, talosapi.HealthRequest{ControlPlanes: cps[:2], Creds: creds}, o); err != nil {
		t.Fatalf("etcd after removing cp3's member: %v", err)
	}
}

// The cluster's own view of its nodes: the Kubernetes Node objects (a
// powered-off worker's stays) and the etcd members, by name.
func TestReadMembers(t *testing.T) {
	t.Parallel()

	s := simtest.Start(t)
	ip := simtest.AddressBlock()
	cp, worker := ip(2).String(), ip(3).String()

	simtest.Boot(s, "cp1", ip(2), "scsi0")
	w := simtest.Boot(s, "w1", ip(3), "scsi0")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	o := simOptions(t)
	creds := adminCreds(t)

	if _, err := talosapi.Apply(ctx, talosapi.Target{Node: cp, Creds: creds}, talosapi.ApplyRequest{Config: nodeConfig(t, talosconfig.RoleControlPlane, ip(2), "/dev/sda", simtest.Version)}, o); err != nil {
		t.Fatal(err)
	}

	if _, err := talosapi.Apply(ctx, talosapi.Target{Node: worker, Creds: creds}, talosapi.ApplyRequest{Config: nodeConfig(t, talosconfig.RoleWorker, ip(2), "/dev/sda", simtest.Version)}, o); err != nil {
		t.Fatal(err)
	}

	if _, err := talosapi.Bootstrap(ctx, talosapi.Target{Node: cp, Creds: creds}, o); err != nil {
		t.Fatal(err)
	}

	if _, err := talosapi.WaitHealthy(ctx, talosapi.HealthRequest{ControlPlanes: []string{cp}, Workers: []string{worker}, Creds: creds, KubeconfigFrom: []string{cp}}, o); err != nil {
		t.Fatal(err)
	}

	w.PowerOff()

	// The worker is asked first and does not answer: the control plane does.
	m, err := talosapi.ReadMembers(ctx, []string{worker, cp}, creds, o, 3*time.Second)
	if err != nil || m["cp1"] != cp || m["w1"] != worker || len(m) != 2 {
		t.Fatalf("members %v %v, want cp1 and the powered-off w1 with their addresses", m, err)
	}
}
