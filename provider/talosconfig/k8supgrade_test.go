package talosconfig

import (
	"strings"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
)

// The pre-checks of `talosctl upgrade-k8s`: what the configuration names
// that the next Kubernetes minor removed fails, naming the path to change;
// the same configuration upgrading on another path passes.
func TestKubernetesUpgradeProblems(t *testing.T) {
	t.Parallel()
	const patch = `cluster:
  apiServer:
    extraArgs:
      feature-gates: AnyVolumeDataSource=true,SomethingElse=false
      enable-admission-plugins: NodeRestriction,SecurityContextDeny
  controllerManager:
    extraArgs:
      feature-gates: GangScheduling=true
machine:
  kubelet:
    extraArgs:
      containerd: /run/containerd/containerd.sock
      feature-gates: AnyVolumeDataSource=true
`
	for _, tc := range []struct {
		role     Role
		from, to string
		want     []string
	}{
		{RoleControlPlane, "v1.36.3", "v1.37.0", []string{
			"machine.kubelet.extraArgs: flag --containerd was removed in Kubernetes 1.37; drop it before upgrading from v1.36.3 to v1.37.0",
			"cluster.apiServer.extraArgs.feature-gates: feature gate AnyVolumeDataSource was removed in Kubernetes 1.37",
			"cluster.controllerManager.extraArgs.feature-gates: feature gate GangScheduling was removed in Kubernetes 1.37",
		}},
		// a worker runs no control plane component: its kubelet only
		{RoleWorker, "v1.36.3", "v1.37.0", []string{"machine.kubelet.extraArgs: flag --containerd"}},
		{RoleControlPlane, "v1.29.4", "v1.30.0", []string{
			"cluster.apiServer.extraArgs.enable-admission-plugins: admission plugin SecurityContextDeny was removed in Kubernetes 1.30",
		}},
		{RoleControlPlane, "v1.35.4", "v1.36.3", nil},
		{RoleControlPlane, "v1.37.0", "v1.37.0", nil},
	} {
		k8s := strings.TrimPrefix(tc.from, "v")
		in := baseInput(t, "v1.14.1", tc.role, patch)
		if tc.from < "v1.32" {
			in = baseInput(t, "v1.11.6", tc.role, patch)
		}
		in.KubernetesVersion = k8s
		cfg, err := configloader.NewFromBytes([]byte(mustGenerate(t, in)))
		if err != nil {
			t.Fatal(err)
		}
		got := KubernetesUpgradeProblems(cfg, tc.from, tc.to)
		if len(got) != len(tc.want) {
			t.Errorf("%s %s -> %s: %d problems, want %d:\n%s", tc.role, tc.from, tc.to, len(got), len(tc.want), strings.Join(got, "\n"))
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s %s -> %s: problem %d = %q, want containing %q", tc.role, tc.from, tc.to, i, got[i], w)
			}
		}
	}
	if got := RemovedAPIResources("v1.36.3", "v1.37.0"); len(got) != 2 || got[0] != "workloads.v1alpha2.scheduling.k8s.io" {
		t.Errorf("RemovedAPIResources 1.36 -> 1.37 = %v", got)
	}
}
