package plan

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestComputeDefaultCluster(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	spec.TalosVersion, spec.KubernetesVersion = "", ""
	p := mustCompute(t, spec, roomy(), nil)

	wantNames := []string{"lab-cp-1", "lab-cp-2", "lab-cp-3", "lab-workers-1", "lab-workers-2"}
	if got := nodeNames(p); !slices.Equal(got, wantNames) {
		t.Fatalf("nodes = %v, want %v", got, wantNames)
	}
	wantHosts := map[string]string{
		"lab-cp-1": "pve1", "lab-cp-2": "pve2", "lab-cp-3": "pve3",
		"lab-workers-1": "pve1", "lab-workers-2": "pve2",
	}
	if got := placement(p); !reflect.DeepEqual(got, wantHosts) {
		t.Errorf("placement = %v, want %v", got, wantHosts)
	}
	wantAddrs := map[string]string{
		"lab-cp-1": "10.0.0.10", "lab-cp-2": "10.0.0.11", "lab-cp-3": "10.0.0.12",
		"lab-workers-1": "10.0.0.13", "lab-workers-2": "10.0.0.14",
	}
	if got := addresses(p); !reflect.DeepEqual(got, wantAddrs) {
		t.Errorf("addresses = %v, want %v", got, wantAddrs)
	}

	c := p.Cluster
	// The newest Talos this provider knows, and that release's default
	// Kubernetes (constants.go at v1.14.1).
	if c.TalosVersion != "v1.14.1" || c.KubernetesVersion != "v1.37.0" {
		t.Errorf("versions = %s/%s, want the defaults v1.14.1/v1.37.0", c.TalosVersion, c.KubernetesVersion)
	}
	if c.Endpoint != "https://10.0.0.5:6443" {
		t.Errorf("endpoint = %q, want the VIP", c.Endpoint)
	}
	if !slices.Equal(c.CertSANs, []string{"10.0.0.5"}) {
		t.Errorf("certSANs = %v", c.CertSANs)
	}
	// The schematic ID of qemu-guest-agent alone, as the Image Factory
	// computes it (shared/pitfalls.md).
	const agentOnly = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
	if !slices.Equal(c.Image.Extensions, []string{GuestAgentExtension}) || c.Image.Platform != "nocloud" || c.Image.SchematicID != agentOnly {
		t.Errorf("image = %+v", c.Image)
	}
	if c.Image.Installer != "factory.talos.dev/nocloud-installer/"+agentOnly+":v1.14.1" ||
		c.Image.ISO != "https://factory.talos.dev/image/"+agentOnly+"/v1.14.1/nocloud-amd64.iso" {
		t.Errorf("image URLs = %s %s", c.Image.ISO, c.Image.Installer)
	}
	if c.CNI.Name != "flannel" || c.ProxyDisabled {
		t.Errorf("cni = %+v proxyDisabled=%v, want flannel with kube-proxy", c.CNI, c.ProxyDisabled)
	}
	if c.ExternalCloudProvider == nil || !slices.Equal(c.ExternalCloudProvider.Manifests, []string{TalosCCMManifest, ServingCertApproverManifest}) {
		t.Errorf("externalCloudProvider = %+v, want Talos CCM and approver (CCM on by default)", c.ExternalCloudProvider)
	}

	e := p.Endpoints
	if e.Bootstrap != "10.0.0.10" || e.BootstrapKubernetes != "https://10.0.0.10:6443" || e.Kubernetes != "https://10.0.0.5:6443" {
		t.Errorf("endpoints = %+v", e)
	}
	if !slices.Equal(e.Talos, []string{"10.0.0.10", "10.0.0.11", "10.0.0.12"}) {
		t.Errorf("talos endpoints = %v, want control plane addresses (never the VIP)", e.Talos)
	}
	if p.Bootstrap != "lab-cp-1" {
		t.Errorf("bootstrap = %q", p.Bootstrap)
	}
	if !slices.Equal(p.Rollout, wantNames) {
		t.Errorf("rollout = %v, want control planes first", p.Rollout)
	}
	if len(p.ISOs) != 3 || p.ISOs[0].Host != "pve1" || p.ISOs[0].Storage != "local" || p.ISOs[0].VolumeID() != "local:iso/"+p.Nodes[0].VM.Boot.ISOFile {
		t.Errorf("isos = %v", p.ISOs)
	}
	if len(p.Removed) != 0 || len(p.Warnings) != 0 {
		t.Errorf("removed = %v warnings = %v", p.Removed, p.Warnings)
	}

	cp := node(t, p, "lab-cp-1")
	vm := cp.VM
	if vm.Cores != 2 || vm.Sockets != 1 || vm.MemoryMiB != 4096 || vm.OSDisk.SizeGiB != 20 || vm.CPUType != "x86-64-v2-AES" {
		t.Errorf("default size = %+v", vm)
	}
	if vm.OSDisk != (Disk{Interface: "scsi0", Storage: "local-lvm", SizeGiB: 20, Device: "/dev/sda"}) {
		t.Errorf("os disk = %+v", vm.OSDisk)
	}
	nic := vm.NICs[0]
	if nic.Bridge != "vmbr0" || nic.Address != "10.0.0.10/24" || nic.Gateway != "10.0.0.1" || nic.MAC == "" {
		t.Errorf("nic = %+v", nic)
	}
	iso := "talos-" + p.Cluster.TalosVersion + "-" + p.Cluster.Image.SchematicID[:12] + "-nocloud-amd64.iso"
	if !vm.Agent || !vm.OnBoot || vm.Boot != (Boot{ISOStorage: "local", ISOFile: iso}) {
		t.Errorf("vm agent=%v onBoot=%v boot=%+v", vm.Agent, vm.OnBoot, vm.Boot)
	}
	// Identity only: no versions, which would say what a node is planned to
	// run, not what it runs.
	if !slices.Equal(vm.Tags, []string{"proxmoxtalos", "cluster-lab", "controlplane"}) {
		t.Errorf("tags = %v", vm.Tags)
	}
	if w := node(t, p, "lab-workers-2").VM.Tags; !slices.Equal(w, []string{"proxmoxtalos", "cluster-lab", "worker", "pool-workers"}) {
		t.Errorf("worker tags = %v", w)
	}

	cfg := cp.Config
	if cfg.Hostname != "lab-cp-1" || cfg.Role != RoleControlPlane || cfg.InstallDisk != "/dev/sda" {
		t.Errorf("config = %+v", cfg)
	}
	if cfg.VIP == nil || cfg.VIP.Address != "10.0.0.5" || cfg.VIP.LinkMAC != nic.MAC {
		t.Errorf("vip = %+v, want 10.0.0.5 on the NIC with MAC %s", cfg.VIP, nic.MAC)
	}
	if node(t, p, "lab-workers-1").Config.VIP != nil {
		t.Error("a worker got the VIP")
	}
}

func TestComputeIsDeterministicAndStable(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	a := mustCompute(t, spec, roomy(), nil)
	b := mustCompute(t, spec, roomy(), nil)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two Computes of the same spec differ")
	}
	// A second run with the first run's state plans exactly the same
	// nodes: the "second preview shows no changes" property.
	prev := roundTrip(t, a.State())
	c := mustCompute(t, spec, roomy(), prev)
	if !reflect.DeepEqual(a.State(), c.State()) {
		t.Errorf("plan with previous state differs:\n%+v\n%+v", a.State(), c.State())
	}
	if s := Compare(prev, c.State()); len(s.Nodes) != 0 {
		t.Errorf("second run reports changes: %s", s)
	}
	for _, n := range c.Nodes {
		if !n.Existing {
			t.Errorf("node %s not marked existing on the second run", n.Name)
		}
	}
}

func TestComputeDoesNotMutateSpec(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	mustCompute(t, spec, roomy(), nil)
	if spec.WorkerPools[0].Size != (Size{}) {
		t.Errorf("Compute wrote defaults into the caller's spec: %+v", spec.WorkerPools[0].Size)
	}
}

func TestComputeReportsAllProblemsAtOnce(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	spec.Name = "Bad_Name"
	spec.ControlPlane.Count = ptr(2)
	spec.WorkerPools[0].Size.MemoryMiB = ptr(512)
	msg := computeErr(t, spec, roomy(), nil)
	wantContains(t, msg, "3 problems", "clusterName:", "controlPlane.count:", "workerPools[0].size.memory:")
}

func TestComputeWithoutFactsWarns(t *testing.T) {
	t.Parallel()
	p := mustCompute(t, baseSpec(), Facts{}, nil)
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "capacity was not checked") {
		t.Errorf("warnings = %v", p.Warnings)
	}
}

func TestComputeRefusesNewerState(t *testing.T) {
	t.Parallel()
	prev := &State{Version: StateVersion + 1}
	if _, err := Compute(baseSpec(), roomy(), prev); err == nil || !strings.Contains(err.Error(), "upgrade the provider") {
		t.Fatalf("newer state: err = %v", err)
	}
}

func roundTrip(t *testing.T, s *State) *State {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out State
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

func jsonString(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// BenchmarkCompute plans a large cluster: 5 control planes and 200 workers
// in 4 pools on 8 hosts, then re-plans it against its own state.
func BenchmarkCompute(b *testing.B) {
	spec := baseSpec()
	spec.ControlPlane.Count = ptr(5)
	spec.Network.AddressRange.End = "10.0.0.250"
	spec.Hosts = nil
	f := Facts{Hosts: map[string]HostFacts{}}
	for i := 1; i <= 8; i++ {
		h := "pve" + itoa(i)
		spec.Hosts = append(spec.Hosts, Host{Node: h})
		f.Hosts[h] = HostFacts{Online: true, FreeMemoryMiB: 1 << 20, CPUs: 64}
	}
	spec.WorkerPools = []WorkerPool{{Name: "a", Count: 50}, {Name: "b", Count: 50}, {Name: "c", Count: 50}, {Name: "d", Count: 50}}
	first, err := Compute(spec, f, nil)
	if err != nil {
		b.Fatal(err)
	}
	prev := first.State()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Compute(spec, f, prev); err != nil {
			b.Fatal(err)
		}
	}
}
