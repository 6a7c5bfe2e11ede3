package talos

import (
	"slices"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
)

// TestQuorumLossRecorded: one control plane of three down keeps the quorum;
// two down lose it, which is recorded once with the members that were down,
// and ends when one comes back.
func TestQuorumLossRecorded(t *testing.T) {
	t.Parallel()

	tc := bootCluster(t, clusterOpts{cps: 3})
	tc.bootstrap(t)

	tc.cps[2].node.PowerOff()
	waitFor(t, "cp3's member down", func() bool { return !tc.cps[2].node.Status().EtcdMember })

	if got := tc.sim.QuorumLosses(); len(got) != 0 {
		t.Fatalf("one member of three down: losses %v", got)
	}

	tc.cps[1].node.PowerOff()
	waitFor(t, "the quorum loss recorded", func() bool { return len(tc.sim.QuorumLosses()) == 1 })

	q := tc.sim.QuorumLosses()[0]
	if slices.Sort(q.Down); !slices.Equal(q.Down, []string{"cp2", "cp3"}) || len(q.Members) != 3 || !q.Until.IsZero() {
		t.Fatalf("loss %+v, want cp2 and cp3 down of 3 members, ongoing", q)
	}

	tc.cps[1].start(tc.sim)
	waitFor(t, "the quorum back", func() bool { return !tc.sim.QuorumLosses()[0].Until.IsZero() })

	if got := tc.sim.QuorumLosses(); len(got) != 1 {
		t.Fatalf("losses %v, want the one episode", got)
	}
}

// TestClusterEndIsNotAQuorumLoss: the last control plane reset without
// leaving etcd (the end of a whole-cluster destroy) wipes the cluster's
// data: no quorum could come back, so that is no loss.
func TestClusterEndIsNotAQuorumLoss(t *testing.T) {
	t.Parallel()

	tc := bootCluster(t, clusterOpts{cps: 1})
	tc.bootstrap(t)

	if _, err := tc.client(t, tc.cps[0]).MachineClient.Reset(ctxT(t), &machine.ResetRequest{Graceful: false}); err != nil {
		t.Fatal(err)
	}

	<-tc.cps[0].host.poweroff

	// A control plane powered off (not reset) in another one-node
	// cluster is a loss: the check runs, and tells the two apart.
	other := bootCluster(t, clusterOpts{cps: 1})
	other.bootstrap(t)
	other.cps[0].node.PowerOff()
	waitFor(t, "the other cluster's loss", func() bool { return len(other.sim.QuorumLosses()) == 1 })

	if got := tc.sim.QuorumLosses(); len(got) != 0 {
		t.Fatalf("the reset of the last member was recorded as a quorum loss: %v", got)
	}
}

// TestReplacedControlPlaneRejoins: a control plane whose VM was replaced
// (same name and address, empty disk) joins etcd again: its previous
// member, down, is removed first as Talos does, so the cluster keeps three
// members.
func TestReplacedControlPlaneRejoins(t *testing.T) {
	t.Parallel()

	tc := bootCluster(t, clusterOpts{cps: 3})
	tc.bootstrap(t)

	c1 := tc.client(t, tc.cps[0])
	before := memberIDs(t, c1)

	tc.cps[2].node.PowerOff()

	fresh := newVM("cp3", tc.cps[2].addr(), "scsi0")
	n := fresh.start(tc.sim)
	waitPhase(t, n, PhaseMaintenance)

	if _, err := maintenanceClient(t, fresh.addr()).ApplyConfiguration(ctxT(t), &machine.ApplyConfigurationRequest{Data: tc.cpConfig, Mode: machine.ApplyConfigurationRequest_AUTO}); err != nil {
		t.Fatal(err)
	}

	waitFor(t, "the new cp3 in etcd", func() bool {
		resp, err := c1.EtcdMemberList(ctxT(t), &machine.EtcdMemberListRequest{})

		return n.Status().EtcdMember && err == nil && allVoting(resp.Messages[0].Members) && memberNamed(resp.Messages[0].Members, "cp3")
	})

	resp, err := c1.EtcdMemberList(ctxT(t), &machine.EtcdMemberListRequest{})
	if err != nil {
		t.Fatal(err)
	}

	var cp3 []uint64
	for _, m := range resp.Messages[0].Members {
		if m.Hostname == "cp3" {
			cp3 = append(cp3, m.Id)
		}
	}

	if len(resp.Messages[0].Members) != 3 || len(cp3) != 1 || cp3[0] == before["cp3"] {
		t.Fatalf("members %v (cp3 was %x): want cp3 once, as a new member", resp.Messages[0].Members, before["cp3"])
	}

	if got := tc.sim.QuorumLosses(); len(got) != 0 {
		t.Fatalf("losses %v", got)
	}
}

// memberNamed reports whether a member list has a member with this hostname.
func memberNamed(members []*machine.EtcdMember, name string) bool {
	for _, m := range members {
		if m.Hostname == name {
			return true
		}
	}

	return false
}
