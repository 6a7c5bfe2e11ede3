package cluster

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
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

// On a Kubernetes upgrade whose new minor stops serving API versions, the
// preview asks a control plane that answered how many objects are stored
// in them: some fail the preview, none pass, and no answer is a warning
// that says what to check.
func TestCheckRemovedAPIs(t *testing.T) {
	t.Parallel()
	p := &plan.Plan{Cluster: plan.ClusterConfig{KubernetesVersion: "v1.37.0"}}
	prev := &plan.State{Nodes: []plan.NodeState{
		{Name: "lab-cp-1", Role: plan.RoleControlPlane, Address: "10.5.0.11", KubernetesVersion: "v1.36.3"},
		{Name: "lab-cp-2", Role: plan.RoleControlPlane, Address: "10.5.0.12", KubernetesVersion: "v1.36.3"},
	}}
	readings := map[string]nodeReading{
		"lab-cp-1": {err: errors.New("connection refused")},
		"lab-cp-2": {running: runningNode{Config: "version: v1alpha1"}},
	}
	creds := &talosapi.Credentials{}
	var asked string
	c := &Component{countObjects: func(_ context.Context, cp string, resources []string, _ *talosapi.Credentials) (map[string]int, error) {
		asked = cp + " " + strings.Join(resources, ",")
		return map[string]int{"workloads.v1alpha2.scheduling.k8s.io": 3}, nil
	}}

	_, err := c.checkRemovedAPIs(context.Background(), p, prev, readings, creds)
	if err == nil || !strings.Contains(err.Error(), "Kubernetes v1.37.0 no longer serves API versions the cluster still stores objects in (3 of workloads.v1alpha2.scheduling.k8s.io, counted through control plane 10.5.0.12)") {
		t.Fatalf("error %v", err)
	}
	if asked != "10.5.0.12 workloads.v1alpha2.scheduling.k8s.io,podgroups.v1alpha2.scheduling.k8s.io" {
		t.Errorf("asked %q, want the control plane that answered about 1.37's removals", asked)
	}

	c.countObjects = func(context.Context, string, []string, *talosapi.Credentials) (map[string]int, error) {
		return nil, nil
	}
	if w, err := c.checkRemovedAPIs(context.Background(), p, prev, readings, creds); err != nil || w != "" {
		t.Errorf("no objects: warning %q, error %v", w, err)
	}

	c.countObjects = func(context.Context, string, []string, *talosapi.Credentials) (map[string]int, error) {
		return nil, errors.New("HTTP 503")
	}
	if w, err := c.checkRemovedAPIs(context.Background(), p, prev, readings, creds); err != nil || !strings.Contains(w, "was not checked") || !strings.Contains(w, "HTTP 503") {
		t.Errorf("no answer: warning %q, error %v", w, err)
	}

	// 1.35 -> 1.36 removes no API version: nothing is asked.
	p.Cluster.KubernetesVersion, prev.Nodes[0].KubernetesVersion, asked = "v1.36.3", "v1.35.4", ""
	if w, err := c.checkRemovedAPIs(context.Background(), p, prev, readings, creds); err != nil || w != "" || asked != "" {
		t.Errorf("1.35 -> 1.36: warning %q, error %v, asked %q", w, err, asked)
	}
}

// An existing cluster's configurations are generated once: the check makes
// them with the cluster's own bundle and hands them on, byte-identical to
// what the applies would generate, only for that plan and bundle. A new
// cluster's check (throwaway bundle) hands nothing on.
func TestCheckConfigsHandsOnWhatItGenerated(t *testing.T) {
	t.Parallel()
	spec := plan.Spec{
		Name: "lab", TalosVersion: "v1.12.5", KubernetesVersion: "v1.35.2",
		Hosts: []plan.Host{{Node: "pve1"}, {Node: "pve2"}, {Node: "pve3"}},
		Network: plan.Network{
			NIC:        plan.NIC{Subnet: "10.0.0.0/24", Gateway: "10.0.0.1", AddressRange: &plan.AddressRange{Start: "10.0.0.10", End: "10.0.0.50"}},
			DNSServers: []string{"10.0.0.1"},
		},
		VIP:         "10.0.0.5",
		WorkerPools: []plan.WorkerPool{{Name: "workers", Count: 2}},
	}
	facts := plan.Facts{Hosts: map[string]plan.HostFacts{}}
	for _, h := range []string{"pve1", "pve2", "pve3"} {
		facts.Hosts[h] = plan.HostFacts{Online: true, FreeMemoryMiB: 64 * 1024, CPUs: 8}
	}
	p, err := plan.Compute(spec, facts, nil)
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := talosconfig.NewSecrets("v1.12.5", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := talosconfig.MarshalSecrets(bundle)
	if err != nil {
		t.Fatal(err)
	}

	if gen, err := checkConfigs(p, nil, ""); err != nil || gen != nil {
		t.Fatalf("check with the throwaway bundle: %v, handed on %v; want nothing", err, gen)
	}
	gen, err := checkConfigs(p, nil, secrets)
	if err != nil || gen == nil {
		t.Fatalf("check with the cluster's bundle: %v, handed on %v", err, gen)
	}
	want, err := machineConfigs(p, secrets)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := gen.reuse(p, secrets)
	if !ok || len(got) != len(p.Nodes) || !maps.Equal(got, want) {
		t.Fatalf("handed on %d configurations (ok %v), want the %d the applies generate", len(got), ok, len(want))
	}
	got[p.Nodes[0].Name] = "changed by its user"
	if again, _ := gen.reuse(p, secrets); again[p.Nodes[0].Name] != want[p.Nodes[0].Name] {
		t.Error("a change to one handed-on map shows in the next")
	}
	other := *p
	if _, ok := gen.reuse(&other, secrets); ok {
		t.Error("handed on for another plan (the one recomputed with the CCM token)")
	}
	if _, ok := gen.reuse(p, secrets+"\n"); ok {
		t.Error("handed on for another bundle")
	}
}
