package talos

import (
	"strings"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	mtype "github.com/siderolabs/talos/pkg/machinery/config/machine"
)

// TestSkewViolationsFollowTheRollout: moving every kube-apiserver before any
// kubelet keeps the version-skew policy; a kubelet ahead of a
// not-yet-upgraded kube-apiserver is recorded.
func TestSkewViolationsFollowTheRollout(t *testing.T) {
	t.Parallel()

	old := func(s string) string { return strings.ReplaceAll(s, ":v1.35.2", ":v1.34.1") }
	tc := bootCluster(t, clusterOpts{cps: 2, workers: 1, patch: old})
	tc.bootstrap(t)

	kubeletOld := func(s string) string {
		return strings.ReplaceAll(s, "kubelet:v1.35.2", "kubelet:v1.34.1")
	}
	componentsOnly := configBytes(t, tc.in, mtype.TypeControlPlane, kubeletOld)

	// Phase one: each control plane's components, kubelets kept.
	for _, v := range tc.cps {
		if _, err := apply(t, tc.client(t, v), componentsOnly, machine.ApplyConfigurationRequest_NO_REBOOT); err != nil {
			t.Fatalf("%s: %v", v.m.Name, err)
		}

		if got := tc.sim.SkewViolations(); len(got) != 0 {
			t.Fatalf("after %s's components: violations %v", v.m.Name, got)
		}
	}

	// Phase two would be safe now; instead roll one control plane back to
	// the old components and move the worker's kubelet: the kubelet is
	// then newer than the oldest kube-apiserver.
	if _, err := apply(t, tc.client(t, tc.cps[1]), tc.cpConfig, machine.ApplyConfigurationRequest_NO_REBOOT); err != nil {
		t.Fatal(err)
	}

	// The reconciler also checks: give it a tick before asserting none.
	time.Sleep(300 * time.Millisecond)

	if got := tc.sim.SkewViolations(); len(got) != 0 {
		t.Fatalf("old components on cp2, old kubelets: violations %v", got)
	}

	if _, err := apply(t, tc.client(t, tc.workers[0]), configBytes(t, tc.in, mtype.TypeWorker), machine.ApplyConfigurationRequest_NO_REBOOT); err != nil {
		t.Fatal(err)
	}

	got := tc.sim.SkewViolations()
	if len(got) != 1 || got[0].Kubelet != "v1.35.2" || got[0].APIServer != "v1.34.1" {
		t.Fatalf("violations %v, want the worker's kubelet v1.35.2 newer than cp2's kube-apiserver v1.34.1", got)
	}
}
