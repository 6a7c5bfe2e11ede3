package plan

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// Secrets bundles are slow to generate; share one per version contract.
var (
	bundlesMu sync.Mutex
	bundles   = map[string]*secrets.Bundle{}
)

func bundle(t *testing.T, talos string) *secrets.Bundle {
	t.Helper()
	bundlesMu.Lock()
	defer bundlesMu.Unlock()
	if b, ok := bundles[talos]; ok {
		return b
	}
	b, err := talosconfig.NewSecrets(talos, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	bundles[talos] = b
	return b
}

// fullSpec turns on every feature that ends up in machine configurations.
func fullSpec(talos, k8s string) Spec {
	s := baseSpec()
	s.TalosVersion, s.KubernetesVersion = talos, k8s
	s.AllowSchedulingOnControlPlanes = true
	s.ControlPlane.Labels = map[string]string{"role": "cp"}
	s.WorkerPools[0].Labels = map[string]string{"tier": "web"}
	s.WorkerPools[0].Taints = []Taint{{Key: "dedicated", Value: "web", Effect: "NoSchedule"}}
	s.WorkerPools[0].DataDisks = []DataDisk{{SizeGiB: 50, Volume: "data"}, {SizeGiB: 100}}
	s.RegistryMirrors = map[string]RegistryMirror{"docker.io": {Endpoints: []string{"https://mirror.local"}, OverridePath: true}}
	s.CNI = CNI{Name: "cilium", InlineManifests: []InlineManifest{{Name: "cilium", Contents: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: cilium\n"}}}
	s.CloudControllerManager.Proxmox = &ProxmoxCCM{URL: "https://pve:8006/api2/json", TokenID: "kubernetes@pve!ccm", TokenSecret: "sekret"}
	s.ExtraManifests = []string{"https://example.com/metrics-server.yaml"}
	s.Patches = []string{"machine:\n  sysctls:\n    vm.max_map_count: \"262144\"\n"}
	s.NodePatches = map[string][]string{"lab-workers-1": {"machine:\n  kubelet:\n    extraArgs:\n      max-pods: \"200\"\n"}}
	return s
}

func TestGeneratedConfigsValidate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ talos, k8s string }{
		{"v1.12.5", "v1.35.2"},
		{"v1.11.3", "v1.34.1"},
	} {
		t.Run(tt.talos, func(t *testing.T) {
			t.Parallel()
			p := mustCompute(t, fullSpec(tt.talos, tt.k8s), roomy(), nil)
			for i := range p.Nodes {
				n := &p.Nodes[i]
				in, err := p.GenerateInput(n, bundle(t, tt.talos), "")
				if err != nil {
					t.Fatalf("%s: %v", n.Name, err)
				}
				res, err := talosconfig.Generate(in)
				if err != nil {
					t.Fatalf("%s: Generate: %v\npatches: %q", n.Name, err, in.Patches)
				}
				checkConfig(t, n, res.Config, tt.talos)
			}
		})
	}
}

// checkConfig reads a generated config back through machinery and checks
// what the plan asked for is in it.
func checkConfig(t *testing.T, n *Node, configYAML, talos string) {
	t.Helper()
	cfg, err := configloader.NewFromBytes([]byte(configYAML))
	if err != nil {
		t.Fatalf("%s: config does not load: %v", n.Name, err)
	}
	m := cfg.RawV1Alpha1().MachineConfig
	cl := cfg.RawV1Alpha1().ClusterConfig
	cp := n.Role == RoleControlPlane
	errorf := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%s (Talos %s): "+format, append([]any{n.Name, talos}, args...)...)
	}

	if got := m.MachineInstall.InstallDisk; got != "/dev/sda" {
		errorf("install disk %q", got)
	}
	if got := m.MachineInstall.InstallImage; !strings.Contains(got, "nocloud-installer/") {
		errorf("install image %q", got)
	}
	if got := m.MachineKubelet.KubeletExtraArgs.ToMap()["cloud-provider"]; len(got) != 1 || got[0] != "external" {
		errorf("kubelet cloud-provider = %v", got)
	}
	if cl.ExternalCloudProviderConfig == nil || cl.ExternalCloudProviderConfig.ExternalEnabled == nil || !*cl.ExternalCloudProviderConfig.ExternalEnabled {
		errorf("external cloud provider not enabled")
	}
	hasAccess := m.MachineFeatures != nil && m.MachineFeatures.KubernetesTalosAPIAccessConfig != nil
	if hasAccess != cp {
		errorf("kubernetesTalosAPIAccess = %v", hasAccess)
	}
	if got := m.MachineRegistries.RegistryMirrors["docker.io"]; got == nil || len(got.MirrorEndpoints) != 1 {
		errorf("registry mirror = %+v", got)
	}
	if cl.ProxyConfig == nil || cl.ProxyConfig.Disabled == nil || !*cl.ProxyConfig.Disabled {
		errorf("kube-proxy not disabled for cilium")
	}
	if got := cl.ClusterNetwork.CNI.CNIName; got != "none" {
		errorf("cni = %q", got)
	}
	if got := m.MachineSysctls["vm.max_map_count"]; got != "262144" {
		errorf("cluster-wide user patch missing: sysctls = %v", m.MachineSysctls)
	}
	manifests := len(cl.ClusterInlineManifests)
	if cp != (manifests == 2) { // cilium + the Proxmox CCM credentials
		errorf("%d inline manifests", manifests)
	}
	if cp && (len(cl.ExtraManifests) != 1 || len(cl.ExternalCloudProviderConfig.ExternalManifests) != 3) {
		errorf("manifests: extra %v ccm %v", cl.ExtraManifests, cl.ExternalCloudProviderConfig.ExternalManifests)
	}

	text := configYAML
	multi := strings.HasPrefix(talos, "v1.12")
	if multi {
		wantIn(t, n.Name, text, "kind: HostnameConfig", "hostname: "+n.Name)
	} else if got := m.MachineNetwork.NetworkHostname; got != n.Name {
		errorf("hostname = %q", got)
	}
	mac := strings.ToLower(n.VM.NICs[0].MAC)
	if cp {
		if multi {
			wantIn(t, n.Name, text, "kind: Layer2VIPConfig", "name: 10.0.0.5", "kind: LinkAliasConfig", mac)
		} else {
			wantIn(t, n.Name, text, "hardwareAddr: "+mac, "ip: 10.0.0.5")
		}
		if cl.AllowSchedulingOnControlPlanes == nil || !*cl.AllowSchedulingOnControlPlanes {
			errorf("allowSchedulingOnControlPlanes not set")
		}
		if m.MachineNodeLabels["role"] != "cp" {
			errorf("labels = %v", m.MachineNodeLabels)
		}
	} else {
		if strings.Contains(text, "10.0.0.5") && !strings.Contains(text, "endpoint: https://10.0.0.5") {
			errorf("a worker config mentions the VIP outside the endpoint")
		}
		if strings.Contains(text, "sekret") {
			errorf("the Proxmox CCM token reached a worker's config")
		}
		if m.MachineNodeLabels["tier"] != "web" || m.MachineNodeTaints["dedicated"] != "web:NoSchedule" {
			errorf("labels %v taints %v", m.MachineNodeLabels, m.MachineNodeTaints)
		}
		wantIn(t, n.Name, text, "kind: UserVolumeConfig", "name: data", `disk.dev_path == "/dev/sdb"`)
		if n.Name == "lab-workers-1" {
			if got := m.MachineKubelet.KubeletExtraArgs.ToMap()["max-pods"]; len(got) != 1 || got[0] != "200" {
				errorf("node patch missing: max-pods = %v", got)
			}
		}
	}
}

func wantIn(t *testing.T, node, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s: config lacks %q", node, w)
		}
	}
}

func TestProviderPatchIsMinimal(t *testing.T) {
	t.Parallel()
	// With the CCM off and no options, a worker's provider patch only names
	// the host.
	spec := baseSpec()
	spec.CloudControllerManager.Enabled = ptr(false)
	p := mustCompute(t, spec, roomy(), nil)
	w := node(t, p, "lab-workers-1")
	patches, err := p.MachineConfigPatches(w, "")
	if err != nil {
		t.Fatal(err)
	}
	want := "apiVersion: v1alpha1\nkind: HostnameConfig\nauto: \"off\"\nhostname: lab-workers-1\n"
	if len(patches) != 1 || patches[0].Source != "provider" || patches[0].Content != want {
		t.Errorf("patches = %q", patches)
	}
	old, err := p.MachineConfigPatches(w, "v1.11.3")
	if err != nil {
		t.Fatal(err)
	}
	if want := "machine:\n    network:\n        hostname: lab-workers-1\n"; old[0].Content != want {
		t.Errorf("1.11 patch = %q", old[0].Content)
	}
}

func TestVolumesNeedTalos110(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	spec.WorkerPools[0].DataDisks = []DataDisk{{SizeGiB: 10, Volume: "data"}}
	p := mustCompute(t, spec, roomy(), nil)
	_, err := p.MachineConfigPatches(node(t, p, "lab-workers-1"), "v1.9.6")
	if err == nil || !strings.Contains(err.Error(), "need Talos v1.10 or newer") {
		t.Errorf("err = %v", err)
	}
}

func TestGenerateInputModes(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	p := mustCompute(t, spec, roomy(), nil)
	in, err := p.GenerateInput(&p.Nodes[0], nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if in.Mode != talosconfig.Metal || in.TalosVersion != "v1.12.5" || in.Endpoint != "https://10.0.0.5:6443" || in.Role != talosconfig.RoleControlPlane {
		t.Errorf("input = %+v", in)
	}
	spec.Image.Template = &Template{VMID: 9000}
	p = mustCompute(t, spec, roomy(), nil)
	in, _ = p.GenerateInput(&p.Nodes[0], nil, "v1.11.3")
	if in.Mode != talosconfig.Cloud || in.TalosVersion != "v1.11.3" {
		t.Errorf("cloned node input = mode %v version %s", in.Mode, in.TalosVersion)
	}
}
