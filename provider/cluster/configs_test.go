package cluster

import (
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// A Kubernetes upgrade whose new configurations still name a flag the new
// minor removed fails the preview, per node, before anything changes; the
// same configurations pass when Kubernetes does not move.
func TestCheckKubernetesUpgradeReportsRemovedFlags(t *testing.T) {
	t.Parallel()
	bundle, err := talosconfig.NewSecrets("v1.14.1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	gen := func(role talosconfig.Role) string {
		res, err := talosconfig.Generate(talosconfig.Input{
			ClusterName: "lab", Endpoint: "https://10.5.0.5:6443", Role: role, Secrets: bundle,
			TalosVersion: "v1.14.1", KubernetesVersion: "1.37.0", InstallDisk: "/dev/sda",
			InstallImage: "factory.talos.dev/nocloud-installer/376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba:v1.14.1",
			Patches:      []string{"machine:\n  kubelet:\n    extraArgs:\n      boot-id-file: /proc/sys/kernel/random/boot_id\n"},
		})
		if err != nil {
			t.Fatal(err)
		}
		return res.Config
	}
	p := &plan.Plan{Cluster: plan.ClusterConfig{KubernetesVersion: "v1.37.0"}, Nodes: []plan.Node{{Name: "lab-cp-1"}, {Name: "lab-workers-1"}}}
	cfgs := map[string]string{"lab-cp-1": gen(talosconfig.RoleControlPlane), "lab-workers-1": gen(talosconfig.RoleWorker)}
	prev := &plan.State{Nodes: []plan.NodeState{{Name: "lab-cp-1", KubernetesVersion: "v1.36.3"}, {Name: "lab-workers-1", KubernetesVersion: "v1.36.3"}}}

	err = checkKubernetesUpgrade(p, prev, cfgs)
	for _, want := range []string{
		"kubernetesVersion: the upgrade would start components with settings Kubernetes removed",
		"node lab-cp-1: machine.kubelet.extraArgs: flag --boot-id-file was removed in Kubernetes 1.37; drop it before upgrading from v1.36.3 to v1.37.0",
		"node lab-workers-1: machine.kubelet.extraArgs: flag --boot-id-file",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want one containing %q", err, want)
		}
	}

	prev.Nodes[0].KubernetesVersion, prev.Nodes[1].KubernetesVersion = "v1.37.0", "v1.37.0"
	if err := checkKubernetesUpgrade(p, prev, cfgs); err != nil {
		t.Errorf("no upgrade: %v", err)
	}
}
