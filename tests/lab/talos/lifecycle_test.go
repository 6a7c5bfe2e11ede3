package talos

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
)

const installerNext = "factory.talos.dev/nocloud-installer/" + qgaID + ":v1.12.6"

func memberIDs(t *testing.T, c *client.Client) map[string]uint64 {
	t.Helper()

	resp, err := c.EtcdMemberList(ctxT(t), &machine.EtcdMemberListRequest{})
	if err != nil {
		t.Fatal(err)
	}

	out := map[string]uint64{}
	for _, m := range resp.Messages[0].Members {
		out[m.Hostname] = m.Id
	}

	return out
}

func TestUpgradeInPlace(t *testing.T) {
	t.Parallel()

	tc := bootCluster(t, clusterOpts{cps: 3})
	tc.bootstrap(t)

	ctx := ctxT(t)
	v := tc.cps[1]
	c := tc.client(t, v)

	_, err := c.MachineClient.Upgrade(ctx, &machine.UpgradeRequest{Image: "docker.io/library/nginx:1.27"})
	mustContain(t, err, `error validating installer image "docker.io/library/nginx:1.27"`)

	boots := v.node.Status().Boots

	resp, err := c.MachineClient.Upgrade(ctx, &machine.UpgradeRequest{Image: installerNext})
	if err != nil || resp.Messages[0].Ack != "Upgrade request received" {
		t.Fatalf("Upgrade = %v, %v", resp, err)
	}

	waitFor(t, "node back on v1.12.6", func() bool {
		st := v.node.Status()

		return st.Boots > boots && st.Phase == PhaseRunning && st.Image.Version == "v1.12.6"
	})

	waitFor(t, "Version v1.12.6", func() bool {
		ver, err := c.Version(ctx)

		return err == nil && ver.Messages[0].Version.Tag == "v1.12.6"
	})

	if !strings.Contains(v.host.content("scsi0"), "version=v1.12.6") {
		t.Fatalf("disk = %q", v.host.content("scsi0"))
	}

	// etcd data survived the upgrade: still three members, cp2 among them.
	waitFor(t, "etcd healthy with 3 members", func() bool {
		resp, err := tc.client(t, tc.cps[0]).EtcdMemberList(ctx, &machine.EtcdMemberListRequest{})

		return err == nil && len(resp.Messages[0].Members) == 3
	})

	if !v.node.Status().EtcdMember {
		t.Fatal("upgraded control plane must run its etcd member again")
	}
}

func TestUpgradeRefusedWithTwoEtcdMembers(t *testing.T) {
	t.Parallel()

	tc := bootCluster(t, clusterOpts{cps: 2})
	tc.bootstrap(t)

	_, err := tc.client(t, tc.cps[0]).MachineClient.Upgrade(ctxT(t), &machine.UpgradeRequest{Image: installerNext})
	mustContain(t, err, "error validating etcd for upgrade: etcd member count(2) is insufficient to maintain quorum if upgrade commences")
}

// Talos skips its etcd pre-upgrade check on preserve from v1.12.9, v1.13.4
// and v1.14 (etcdupgrade.go skipsEtcdCheckOnPreserve): a 2-member cluster
// that a plain upgrade may not touch upgrades with preserve on v1.14.1 and is
// still refused on v1.12.5.
func TestPreserveSkipsTheEtcdCheckFromTalos114(t *testing.T) {
	t.Parallel()

	for _, version := range []string{"v1.14.1", testVersion} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()

			// Booted from that release's ISO and installed from its installer.
			image := strings.ReplaceAll(installer, testVersion, version)
			tc := bootCluster(t, clusterOpts{cps: 2, version: version, patch: func(s string) string { return strings.ReplaceAll(s, installer, image) }})
			tc.bootstrap(t)

			if got := tc.cps[0].node.Status().Image.Version; got != version {
				t.Fatalf("cp1 runs %s, want %s", got, version)
			}

			c := tc.client(t, tc.cps[0])

			_, err := c.MachineClient.Upgrade(ctxT(t), &machine.UpgradeRequest{Image: image, Preserve: true})
			if version == testVersion {
				mustContain(t, err, "etcd member count(2) is insufficient to maintain quorum")

				return
			}

			if err != nil {
				t.Fatalf("upgrade with preserve on %s: %v (Talos skips its etcd check there)", version, err)
			}
		})
	}
}

func TestStagedUpgradeAndMetalInstallerPitfall(t *testing.T) {
	t.Parallel()

	tc := bootCluster(t, clusterOpts{cps: 1})
	tc.bootstrap(t)

	v := tc.cps[0]
	c := tc.client(t, v)
	ctx := ctxT(t)

	if _, err := c.MachineClient.Upgrade(ctx, &machine.UpgradeRequest{Image: installerNext, Stage: true}); err != nil {
		t.Fatal(err)
	}

	waitFor(t, "staged upgrade applied on reboot", func() bool {
		st := v.node.Status()

		return st.Phase == PhaseRunning && st.Image.Version == "v1.12.6"
	})

	// The vanilla installer is a metal image: after the upgrade the node
	// ignores cloud-init, has no address in the lab, and the log says why.
	// (A control plane's upgrade asks etcd first: wait for apid and etcd,
	// which comes up a moment after apid.)
	waitFor(t, "apid and etcd", func() bool { return apidAndEtcd(ctx, c) })

	if _, err := c.MachineClient.Upgrade(ctx, &machine.UpgradeRequest{Image: "ghcr.io/siderolabs/installer:v1.12.6"}); err != nil {
		t.Fatal(err)
	}

	waitFor(t, "metal node booted", func() bool {
		st := v.node.Status()

		return st.Image.Platform == PlatformMetal && st.Phase == PhaseRunning
	})

	if v.node.Status().Address.IsValid() {
		t.Fatal("a metal node must not get the cloud-init address")
	}

	if !strings.Contains(tc.logs.String(), `platform \"metal\" ignores the cloud-init drive`) {
		t.Fatalf("log does not explain the unreachable node:\n%s", tc.logs.String())
	}

	if _, ok := v.node.Agent(); ok {
		t.Fatal("the vanilla installer has no qemu-guest-agent extension: the agent must not answer")
	}
}

func TestGracefulResetLeavesEtcd(t *testing.T) {
	t.Parallel()

	tc := bootCluster(t, clusterOpts{cps: 3})
	tc.bootstrap(t)

	ctx := ctxT(t)
	v := tc.cps[2]

	if _, err := tc.client(t, v).MachineClient.Reset(ctx, &machine.ResetRequest{Graceful: true, Reboot: true}); err != nil {
		t.Fatal(err)
	}

	// Wiped, it boots the ISO again: maintenance mode.
	waitPhase(t, v.node, PhaseMaintenance)

	if got := v.host.content("scsi0"); got != wipedContent {
		t.Fatalf("system disk after reset = %q", got)
	}

	members := memberIDs(t, tc.client(t, tc.cps[0]))
	if len(members) != 2 || members["cp3"] != 0 {
		t.Fatalf("etcd members after cp3 left = %v", members)
	}

	// The Node object stays (NotReady) until someone deletes it.
	waitFor(t, "cp3 NotReady", func() bool {
		nodes, err := tc.kubeNodes(t)
		if err != nil {
			return false
		}

		n, ok := nodeByName(nodes, "cp3")

		return ok && readyStatus(n) != "True"
	})
}

func TestResetOfTheLastEtcdMember(t *testing.T) {
	t.Parallel()

	tc := bootCluster(t, clusterOpts{cps: 1})
	tc.bootstrap(t)

	ctx := ctxT(t)
	v := tc.cps[0]
	c := tc.client(t, v)

	// etcd refuses to remove its last member: the graceful reset aborts and
	// the node keeps running.
	if _, err := c.MachineClient.Reset(ctx, &machine.ResetRequest{Graceful: true}); err != nil {
		t.Fatal(err)
	}

	waitFor(t, "reset failure in the log", func() bool {
		return strings.Contains(tc.logs.String(), "re-configuration failed due to not enough started members")
	})
	waitPhase(t, v.node, PhaseRunning)

	if !strings.HasPrefix(v.host.content("scsi0"), contentPrefix) {
		t.Fatal("an aborted reset must not wipe the disk")
	}

	err := c.EtcdLeaveCluster(ctx, &machine.EtcdLeaveClusterRequest{})
	mustContain(t, err, "failed to leave cluster: failed to remove member")

	// A non-graceful reset without reboot wipes and powers off.
	if _, err := c.MachineClient.Reset(ctx, &machine.ResetRequest{Graceful: false, Reboot: false}); err != nil {
		t.Fatal(err)
	}

	select {
	case <-v.host.poweroff:
	case <-ctx.Done():
		t.Fatal("the VM did not power off after reset")
	}

	if v.host.content("scsi0") != wipedContent {
		t.Fatal("reset must wipe the system disk")
	}
}

func TestEtcdQuorumRules(t *testing.T) {
	t.Parallel()

	tc := bootCluster(t, clusterOpts{cps: 3})
	tc.bootstrap(t)

	ctx := ctxT(t)
	c1 := tc.client(t, tc.cps[0])
	ids := memberIDs(t, c1)

	// One member down: removing a running member would leave the active
	// members without a quorum of the remaining cluster.
	tc.cps[2].node.PowerOff()

	err := c1.EtcdRemoveMemberByID(ctx, &machine.EtcdRemoveMemberByIDRequest{MemberId: ids["cp2"]})
	mustContain(t, err, "etcdserver: unhealthy cluster")

	// Two down: no quorum, no leader, Kubernetes not ready. etcd says "no
	// leader" once its election timeout passed without hearing from a
	// quorum; until then the member list may still answer, or fail with
	// another of etcd's own errors (a read that found no quorum in time).
	// An error that is not etcd's (the lab's dial or gateway error: cp1's
	// member is up) fails the test at once.
	tc.cps[1].node.PowerOff()

	waitFor(t, "no leader", func() bool {
		_, err = c1.EtcdMemberList(ctx, &machine.EtcdMemberListRequest{})
		if err != nil && !strings.Contains(err.Error(), "etcdserver: ") {
			t.Fatalf("member list without quorum: %v, want etcd's own answer", err)
		}

		return err != nil && strings.Contains(err.Error(), "etcdserver: no leader")
	})

	kc := tc.kubeconfig(t)
	hc, _ := kubeHTTP(t, kc)

	// The real apiserver loses its etcd: its own readiness check says so.
	var last string

	waitFor(t, "readyz failing without quorum", func() bool {
		resp, err := hc.Get("https://" + tc.cps[0].addr().String() + ":6443/readyz")
		if err != nil {
			last = err.Error()

			return false
		}

		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close() //nolint:errcheck

		last = resp.Status + " " + string(body)

		return resp.StatusCode == http.StatusInternalServerError && strings.Contains(string(body), "[-]etcd failed")
	})

	if !strings.Contains(last, "[-]etcd failed") {
		t.Fatalf("readyz without quorum: %s", last)
	}

	err = c1.EtcdRemoveMemberByID(ctx, &machine.EtcdRemoveMemberByIDRequest{MemberId: ids["cp3"]})
	mustContain(t, err, "etcdserver: no leader")

	// cp2 back: quorum again; the stopped cp3 can be removed.
	tc.cps[1].start(tc.sim)
	waitFor(t, "quorum back", func() bool { _, err := c1.EtcdMemberList(ctx, &machine.EtcdMemberListRequest{}); return err == nil })

	if err := c1.EtcdRemoveMemberByID(ctx, &machine.EtcdRemoveMemberByIDRequest{MemberId: ids["cp3"]}); err != nil {
		t.Fatal(err)
	}

	err = c1.EtcdRemoveMemberByID(ctx, &machine.EtcdRemoveMemberByIDRequest{MemberId: ids["cp3"]})
	wantCode(t, err, codes.NotFound, "etcdserver: member not found")

	if got := memberIDs(t, c1); len(got) != 2 {
		t.Fatalf("members = %v", got)
	}

	// cp3 comes back with etcd data of a removed member: etcd cannot start.
	n3 := tc.cps[2].start(tc.sim)
	waitFor(t, "cp3 running", func() bool { return n3.Status().Phase == PhaseRunning })
	waitFor(t, "etcd failure logged", func() bool { return strings.Contains(tc.logs.String(), "etcd fails to start") })

	if n3.Status().EtcdMember {
		t.Fatal("a removed member must not rejoin by itself")
	}
}
