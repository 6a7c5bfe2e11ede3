package talos

import (
	"context"
	"strings"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	mtype "github.com/siderolabs/talos/pkg/machinery/config/machine"
)

// The installer's pre-flight refuses a downgrade too far (1.12.5 -> 1.8.0)
// and a Talos that does not support the running Kubernetes (1.35 on
// 1.11): the Upgrade call is acknowledged, the upgrade sequence fails, and
// the node reboots into the version it runs, staged or not.
func TestUpgradePreflightKeepsVersion(t *testing.T) {
	t.Parallel()

	tc := bootCluster(t, clusterOpts{cps: 1})
	tc.bootstrap(t)

	v := tc.cps[0]
	c := tc.client(t, v)
	ctx := ctxT(t)

	for _, up := range []struct {
		image string
		stage bool
		log   string
	}{
		{"factory.talos.dev/nocloud-installer/" + qgaID + ":v1.8.0", false,
			"pre-flight checks failed: host version 1.12.5 is too new to downgrade to Talos 1.8.0"},
		{installer111, false,
			"pre-flight checks failed: component kubelet version issue: version of Kubernetes 1.35.2 is too new to be used with Talos 1.11.5"},
		{installer111, true,
			"pre-flight checks failed: component kubelet version issue: version of Kubernetes 1.35.2 is too new to be used with Talos 1.11.5"},
	} {
		waitFor(t, "apid and etcd", func() bool { return apidAndEtcd(ctx, c) })

		boots := v.node.Status().Boots
		before := strings.Count(tc.logs.String(), up.log)

		resp, err := c.MachineClient.Upgrade(ctx, &machine.UpgradeRequest{Image: up.image, Stage: up.stage})
		if err != nil || resp.Messages[0].Ack != "Upgrade request received" {
			t.Fatalf("Upgrade(%s, stage=%v) = %v, %v: the API acknowledges, the installer refuses later", up.image, up.stage, resp, err)
		}

		waitFor(t, "the refusal in the log: "+up.log, func() bool { return strings.Count(tc.logs.String(), up.log) > before })
		waitFor(t, "running again", func() bool {
			st := v.node.Status()

			return st.Boots > boots && st.Phase == PhaseRunning && st.Configured
		})

		if got := v.node.Status().Image.Version; got != testVersion {
			t.Fatalf("version after a refused upgrade to %s = %s", up.image, got)
		}

		if !strings.Contains(v.host.content("scsi0"), "version="+testVersion) {
			t.Fatalf("disk after a refused upgrade = %q", v.host.content("scsi0"))
		}
	}

	// Still upgradeable: the pre-flight refuses only what Talos refuses.
	// (Running comes before apid listens, and etcd a moment after: a
	// control plane's upgrade asks etcd first.)
	waitFor(t, "apid and etcd", func() bool { return apidAndEtcd(ctx, c) })

	if _, err := c.MachineClient.Upgrade(ctx, &machine.UpgradeRequest{Image: installerNext}); err != nil {
		t.Fatal(err)
	}

	waitFor(t, "upgraded", func() bool { st := v.node.Status(); return st.Phase == PhaseRunning && st.Image.Version == "v1.12.6" })
}

func TestPreflightChecks(t *testing.T) {
	t.Parallel()

	in := clusterInputK8s(t, netipPrefix("127.0.0.1/32").Addr(), "1.34.1")
	cp, err := loadConfig(configBytes(t, in, mtype.TypeControlPlane))
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct{ host, installer, want string }{
		{"v1.12.5", "v1.12.6", ""},
		{"v1.12.5", "v1.11.5", ""}, // a downgrade within 1.11's window
		{"v1.12.5", "v1.10.6", "host version 1.12.5 is too new to downgrade to Talos 1.10.6"},
		{"v1.8.3", "v1.12.5", "host version 1.8.3 is too old to upgrade to Talos 1.12.5"},
		{"v1.11.5", "v1.10.6", "component kubelet version issue: version of Kubernetes 1.34.1 is too new to be used with Talos 1.10.6"},
	} {
		err := upgradePreflight(tc.host, tc.installer, cp)

		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s -> %s: %v", tc.host, tc.installer, err)
		case tc.want != "" && (err == nil || err.Error() != "pre-flight checks failed: "+tc.want):
			t.Errorf("%s -> %s: %v, want %q", tc.host, tc.installer, err, tc.want)
		}
	}
}

// apidAndEtcd: a control plane answers and its etcd member runs.
func apidAndEtcd(ctx context.Context, c *client.Client) bool {
	_, err := c.EtcdMemberList(ctx, &machine.EtcdMemberListRequest{})

	return err == nil
}
