package talos

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
)

// Tests of the real etcd members: each control plane runs its own etcd
// process, and what the Talos API shows is etcd's answer.

// TestRealEtcdMembersJoinSnapshotAlarms: bootstrap and two joins make a
// real cluster of three voting members (each joined as a learner and was
// promoted), which every member's own status confirms; the snapshot is a
// real etcd snapshot (the database followed by its sha256); an alarm
// raised on a member is listed and disarmed by etcd.
func TestRealEtcdMembersJoinSnapshotAlarms(t *testing.T) {
	t.Parallel()

	tc := bootCluster(t, clusterOpts{cps: 3})
	tc.bootstrap(t)

	ctx := ctxT(t)
	c1 := tc.client(t, tc.cps[0])

	waitFor(t, "every member promoted", func() bool {
		resp, err := c1.EtcdMemberList(ctx, &machine.EtcdMemberListRequest{})
		if err != nil {
			return false
		}

		for _, m := range resp.Messages[0].Members {
			if m.IsLearner || m.Hostname == "" {
				return false
			}
		}

		return len(resp.Messages[0].Members) == 3
	})

	// Every control plane's apiserver pod serves, and the cluster's one
	// kube-apiserver process has served since the first did: members
	// joining did not restart it (on Talos each joining control plane
	// starts an apiserver of its own; the others keep theirs).
	waitFor(t, "every control plane's apiserver serving", func() bool {
		for _, v := range tc.cps {
			if !apiServing(tc.sim, v.node) {
				return false
			}
		}

		return true
	})

	if n := apiServerStarts(tc.sim); n != 1 {
		t.Fatalf("kube-apiserver started %d times for one cluster of three control planes, want once:\n%s", n, tc.logs.String())
	}

	ids := memberIDs(t, c1)
	// All three statuses in one round, retried until they name a single
	// leader: an election between two calls (a loaded machine) would
	// otherwise show two leaders. A member serves clients only once it
	// has published itself to the cluster (etcd's ReadyNotify): until then
	// the call fails.
	var (
		sts     []*machine.EtcdMemberStatus
		leaders map[uint64]bool
	)

	waitFor(t, "every member's status naming one leader", func() bool {
		sts, leaders = nil, map[uint64]bool{}

		for _, v := range tc.cps {
			resp, err := tc.client(t, v).EtcdStatus(ctx)
			if err != nil {
				return false
			}

			st := resp.Messages[0].MemberStatus
			sts = append(sts, st)
			leaders[st.Leader] = true
		}

		return len(leaders) == 1 && !leaders[0]
	})

	for i, v := range tc.cps {
		st := sts[i]

		if want := ids[v.node.machine.Name]; st.MemberId != want || want == 0 {
			t.Fatalf("cp%d's own member is %x, the member list says %x", i+1, st.MemberId, want)
		}

		if st.ProtocolVersion != etcdVersion() || st.DbSize == 0 || st.RaftIndex == 0 || st.IsLearner {
			t.Fatalf("cp%d status %+v: want etcd %s's numbers of a voting member", i+1, st, etcdVersion())
		}
	}

	if !slices.Contains(mapValues(ids), firstKey(leaders)) {
		t.Fatalf("members' leader %v, want one among %v", leaders, ids)
	}

	// A snapshot is the bbolt database followed by its sha256
	// (etcdutl snapshot: hasChecksum).
	snap := etcdSnapshot(t, c1)
	if len(snap) < sha256.Size+1024 {
		t.Fatalf("snapshot of %d bytes", len(snap))
	}

	body, sum := snap[:len(snap)-sha256.Size], snap[len(snap)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		t.Fatal("the snapshot does not end with the sha256 of its database: not etcd's snapshot format")
	}

	if err := tc.sim.SetEtcdAlarm(tc.cps[1].node, "NOSPACE"); err != nil {
		t.Fatal(err)
	}

	alarms, err := c1.EtcdAlarmList(ctx)
	if err != nil {
		t.Fatal(err)
	}

	if a := alarms.Messages[0].MemberAlarms; len(a) != 1 || a[0].MemberId != ids["cp2"] || a[0].Alarm != machine.EtcdMemberAlarm_NOSPACE {
		t.Fatalf("alarms %v, want cp2's NOSPACE", a)
	}

	if _, err := c1.EtcdAlarmDisarm(ctx); err != nil {
		t.Fatal(err)
	}

	alarms, err = c1.EtcdAlarmList(ctx)
	if err != nil || len(alarms.Messages[0].MemberAlarms) != 0 {
		t.Fatalf("alarms after disarm: %v, %v", alarms, err)
	}
}

// TestRealEtcdQuorumLoss: two of three members' processes down is a
// quorum loss, recorded once, during which etcd itself answers "no
// leader"; one back ends it.
func TestRealEtcdQuorumLoss(t *testing.T) {
	t.Parallel()

	tc := bootCluster(t, clusterOpts{cps: 3})
	tc.bootstrap(t)

	ctx := ctxT(t)
	c1 := tc.client(t, tc.cps[0])

	tc.cps[2].node.PowerOff()
	waitFor(t, "cp3's member down", func() bool { return !tc.cps[2].node.Status().EtcdMember })

	if _, err := c1.EtcdMemberList(ctx, &machine.EtcdMemberListRequest{}); err != nil {
		t.Fatalf("two of three members run: %v", err)
	}

	tc.cps[1].node.PowerOff()
	waitFor(t, "the quorum loss recorded", func() bool { return len(tc.sim.QuorumLosses()) == 1 })

	// etcd's answer, once its election timeout has passed without a leader.
	waitFor(t, "etcd says no leader", func() bool {
		_, err := c1.EtcdMemberList(ctx, &machine.EtcdMemberListRequest{})

		return err != nil && strings.Contains(err.Error(), "etcdserver: no leader")
	})

	tc.cps[1].start(tc.sim)
	waitFor(t, "the quorum back", func() bool { return !tc.sim.QuorumLosses()[0].Until.IsZero() })
	waitFor(t, "etcd answers again", func() bool {
		_, err := c1.EtcdMemberList(ctx, &machine.EtcdMemberListRequest{})

		return err == nil
	})

	if got := tc.sim.QuorumLosses(); len(got) != 1 {
		t.Fatalf("losses %v, want the one episode", got)
	}
}

// TestRealEtcdLeaveAndRemove: a member that is down fails the pre-upgrade
// check and is removed by ID
// through a running one, and its node, back, does not run etcd again; a
// graceful reset leaves etcd (MemberRemove of its own member); etcd
// refuses to remove the last member.
func TestRealEtcdLeaveAndRemove(t *testing.T) {
	t.Parallel()

	tc := bootCluster(t, clusterOpts{cps: 3})
	tc.bootstrap(t)

	ctx := ctxT(t)
	c1 := tc.client(t, tc.cps[0])

	// Talos's pre-upgrade check passes once every member serves: a member
	// that has just joined answers only once it has published itself
	// (etcdupgrade.go), which can take longer than the check's 15 s.
	waitFor(t, "the pre-upgrade check passes with every member up", func() bool {
		return tc.cps[0].node.validateForUpgrade(ctx) == nil
	})

	cp3 := memberIDs(t, c1)["cp3"]
	tc.cps[2].node.PowerOff()
	waitFor(t, "cp3's member down", func() bool { return !tc.cps[2].node.Status().EtcdMember })

	// Talos's pre-upgrade check reads through every member: cp3's does not
	// answer within QuorumCheckTimeout.
	_, err := c1.MachineClient.Upgrade(ctx, &machine.UpgradeRequest{Image: installerNext})
	mustContain(t, err, fmt.Sprintf("error validating etcd for upgrade: etcd member %016x is not healthy; all members must be healthy to perform an upgrade: context deadline exceeded", cp3))

	if err := c1.EtcdRemoveMemberByID(ctx, &machine.EtcdRemoveMemberByIDRequest{MemberId: cp3}); err != nil {
		t.Fatal(err)
	}

	if ids := memberIDs(t, c1); len(ids) != 2 || ids["cp3"] != 0 {
		t.Fatalf("members after removing cp3: %v", ids)
	}

	tc.cps[2].start(tc.sim)
	waitFor(t, "cp3 says its member was removed", func() bool {
		return strings.Contains(tc.logs.String(), "this node's member was removed from the etcd cluster while it was down")
	})

	if _, err := tc.client(t, tc.cps[1]).MachineClient.Reset(ctx, &machine.ResetRequest{Graceful: true, Reboot: true}); err != nil {
		t.Fatal(err)
	}

	waitPhase(t, tc.cps[1].node, PhaseMaintenance)

	if ids := memberIDs(t, c1); len(ids) != 1 || ids["cp1"] == 0 {
		t.Fatalf("members after cp2 left: %v", ids)
	}

	err = c1.EtcdLeaveCluster(ctx, &machine.EtcdLeaveClusterRequest{})
	mustContain(t, err, "re-configuration failed due to not enough started members")

	if len(tc.sim.QuorumLosses()) != 0 {
		t.Fatalf("quorum losses %v", tc.sim.QuorumLosses())
	}
}

func etcdStatus(t *testing.T, c *client.Client) *machine.EtcdMemberStatus {
	t.Helper()

	resp, err := c.EtcdStatus(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}

	return resp.Messages[0].MemberStatus
}

func etcdSnapshot(t *testing.T, c *client.Client) []byte {
	t.Helper()

	r, err := c.EtcdSnapshot(ctxT(t), &machine.EtcdSnapshotRequest{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close() //nolint:errcheck

	var buf bytes.Buffer
	if _, err := buf.ReadFrom(r); err != nil {
		t.Fatal(err)
	}

	return buf.Bytes()
}

func mapValues(m map[string]uint64) []uint64 {
	var out []uint64
	for _, v := range m {
		out = append(out, v)
	}

	return out
}

func firstKey(m map[uint64]bool) uint64 {
	for k := range m {
		return k
	}

	return 0
}

// apiServing: n's kube-apiserver static pod serves (the lab forwards its
// address to the cluster's apiserver).
func apiServing(s *Sim, n *Node) bool {
	s.mu.Lock()
	defer s.mu.Unlock()

	return !n.apiReadyAt.IsZero()
}

// apiServerStarts is how many kube-apiserver processes the simulator's
// clusters started.
func apiServerStarts(s *Sim) int {
	s.mu.Lock()

	var kcs []*kubeControlPlane

	for _, c := range s.clusters {
		if c.kube != nil {
			kcs = append(kcs, c.kube)
		}
	}
	s.mu.Unlock()

	n := 0

	for _, k := range kcs {
		k.mu.Lock()
		n += k.starts
		k.mu.Unlock()
	}

	return n
}
