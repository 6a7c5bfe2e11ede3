package plan

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

func TestInstallDiskAndDataDisks(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		bus, install string
		data         []string
	}{
		{"scsi", "/dev/sda", []string{"/dev/sdb", "/dev/sdc"}},
		{"sata", "/dev/sda", []string{"/dev/sdb", "/dev/sdc"}},
		{"virtio", "/dev/vda", []string{"/dev/vdb", "/dev/vdc"}},
	} {
		t.Run(tt.bus, func(t *testing.T) {
			t.Parallel()
			spec := baseSpec()
			spec.DiskInterface = tt.bus
			spec.Hosts[1].DiskStorage = "ceph"
			spec.WorkerPools[0].DataDisks = []DataDisk{{SizeGiB: 100}, {SizeGiB: 50, Storage: "fast", Volume: "data"}}
			p := mustCompute(t, spec, roomy(), nil)
			w := node(t, p, "lab-workers-2") // on pve2
			if w.Config.InstallDisk != tt.install || w.VM.OSDisk.Interface != tt.bus+"0" || w.VM.OSDisk.Device != tt.install {
				t.Errorf("install disk %q os disk %+v", w.Config.InstallDisk, w.VM.OSDisk)
			}
			want := []Disk{
				{Interface: tt.bus + "1", Storage: "ceph", SizeGiB: 100, Device: tt.data[0]},
				{Interface: tt.bus + "2", Storage: "fast", SizeGiB: 50, Device: tt.data[1], Volume: "data"},
			}
			if !reflect.DeepEqual(w.VM.DataDisks, want) {
				t.Errorf("data disks = %+v", w.VM.DataDisks)
			}
			if !reflect.DeepEqual(w.Config.Volumes, []Volume{{Name: "data", Device: tt.data[1]}}) {
				t.Errorf("volumes = %+v", w.Config.Volumes)
			}
			if cp := node(t, p, "lab-cp-1"); len(cp.VM.DataDisks) != 0 {
				t.Errorf("control plane got data disks: %+v", cp.VM.DataDisks)
			}
		})
	}
	spec := baseSpec()
	spec.DiskInterface = "virtio"
	spec.InstallDisk = "/dev/disk/by-id/virtio-talos"
	if d := mustCompute(t, spec, roomy(), nil).Nodes[0].Config.InstallDisk; d != "/dev/disk/by-id/virtio-talos" {
		t.Errorf("install disk override = %q", d)
	}
}

func TestPatchesApplyInOrder(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	spec.Patches = []string{"all"}
	spec.WorkerPatches = []string{"workers"}
	spec.ControlPlane.Patches = []string{"cp"}
	spec.ControlPlane.Nodes = []NodeSpec{{Patches: []string{"cp1 own"}}, {}, {}}
	spec.WorkerPools[0].Patches = []string{"pool"}
	spec.NodePatches = map[string][]string{"lab-cp-1": {"cp1 map"}, "lab-workers-2": {"w2 map"}}

	p := mustCompute(t, spec, roomy(), nil)
	if got := p.Cluster.Patches; !reflect.DeepEqual(got, []Patch{{Source: "patches[0]", Content: "all"}}) {
		t.Errorf("cluster patches = %+v", got)
	}
	wantCP := []Patch{
		{Source: "controlPlane.patches[0]", Content: "cp"},
		{Source: "controlPlane.nodes[0].patches[0]", Content: "cp1 own"},
		{Source: `nodePatches["lab-cp-1"][0]`, Content: "cp1 map"},
	}
	if got := node(t, p, "lab-cp-1").Config.Patches; !reflect.DeepEqual(got, wantCP) {
		t.Errorf("cp-1 patches = %+v", got)
	}
	if got := node(t, p, "lab-cp-2").Config.Patches; !reflect.DeepEqual(got, wantCP[:1]) {
		t.Errorf("cp-2 patches = %+v", got)
	}
	wantW := []Patch{
		{Source: "workerPatches[0]", Content: "workers"},
		{Source: "workerPools[0].patches[0]", Content: "pool"},
		{Source: `nodePatches["lab-workers-2"][0]`, Content: "w2 map"},
	}
	if got := node(t, p, "lab-workers-2").Config.Patches; !reflect.DeepEqual(got, wantW) {
		t.Errorf("workers-2 patches = %+v", got)
	}
}

func TestLabelsAndTaints(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	spec.WorkerPools[0] = WorkerPool{
		Name:   "gpu",
		Labels: map[string]string{"gpu": "true", "tier": "pool"},
		Taints: []Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: "NoSchedule"}, {Key: "spot", Effect: "PreferNoSchedule"}},
		Nodes: []NodeSpec{
			{Labels: map[string]string{"tier": "node"}, Taints: []Taint{{Key: "spot", Effect: "NoExecute"}}},
			{},
		},
	}
	p := mustCompute(t, spec, roomy(), nil)
	n1 := node(t, p, "lab-gpu-1").Config
	if !maps.Equal(n1.NodeLabels, map[string]string{"gpu": "true", "tier": "node"}) {
		t.Errorf("labels = %v, want the node's own label to win", n1.NodeLabels)
	}
	if !maps.Equal(n1.NodeTaints, map[string]string{"nvidia.com/gpu": "present:NoSchedule", "spot": "NoExecute"}) {
		t.Errorf("taints = %v", n1.NodeTaints)
	}
	n2 := node(t, p, "lab-gpu-2").Config
	if n2.NodeTaints["spot"] != "PreferNoSchedule" || n2.NodeLabels["tier"] != "pool" {
		t.Errorf("node 2 = %v %v", n2.NodeLabels, n2.NodeTaints)
	}
	if cp := node(t, p, "lab-cp-1").Config; len(cp.NodeLabels) != 0 || len(cp.NodeTaints) != 0 {
		t.Errorf("control plane got pool labels: %v %v", cp.NodeLabels, cp.NodeTaints)
	}
}

func TestCloudControllerManager(t *testing.T) {
	t.Parallel()
	t.Run("on by default", func(t *testing.T) {
		t.Parallel()
		p := mustCompute(t, baseSpec(), roomy(), nil)
		for _, n := range p.Nodes {
			want := map[string]string{"cloud-provider": "external", "rotate-server-certificates": "true"}
			if !maps.Equal(n.Config.KubeletExtraArgs, want) {
				t.Errorf("%s kubelet args = %v", n.Name, n.Config.KubeletExtraArgs)
			}
			access := n.Config.TalosAPIAccess
			if n.Role == RoleWorker && access != nil {
				t.Errorf("worker %s got Talos API access", n.Name)
			}
			if n.Role == RoleControlPlane && (access == nil ||
				!slices.Equal(access.AllowedRoles, []string{"os:reader"}) ||
				!slices.Equal(access.AllowedKubernetesNamespaces, []string{"kube-system"})) {
				t.Errorf("control plane %s Talos API access = %+v", n.Name, access)
			}
		}
	})
	t.Run("off", func(t *testing.T) {
		t.Parallel()
		spec := baseSpec()
		spec.CloudControllerManager.Enabled = ptr(false)
		p := mustCompute(t, spec, roomy(), nil)
		if p.Cluster.ExternalCloudProvider != nil {
			t.Errorf("externalCloudProvider = %+v", p.Cluster.ExternalCloudProvider)
		}
		for _, n := range p.Nodes {
			if len(n.Config.KubeletExtraArgs) != 0 || n.Config.TalosAPIAccess != nil {
				t.Errorf("%s still configured for a CCM: %+v", n.Name, n.Config)
			}
		}
	})
	t.Run("with the Proxmox CCM and mirrored manifests", func(t *testing.T) {
		t.Parallel()
		spec := baseSpec()
		spec.CloudControllerManager = CloudControllerManager{
			TalosCCMManifest: "https://mirror.local/talos-ccm.yml",
			Proxmox: &ProxmoxCCM{
				URL: "https://pve.local:8006/api2/json", TokenID: "kubernetes@pve!ccm", TokenSecret: `s3"cret`,
			},
		}
		p := mustCompute(t, spec, roomy(), nil)
		want := []string{"https://mirror.local/talos-ccm.yml", ServingCertApproverManifest, ProxmoxCCMManifest}
		if got := p.Cluster.ExternalCloudProvider.Manifests; !slices.Equal(got, want) {
			t.Errorf("manifests = %v", got)
		}
		if len(p.Cluster.InlineManifests) != 1 {
			t.Fatalf("inline manifests = %+v", p.Cluster.InlineManifests)
		}
		secret := p.Cluster.InlineManifests[0].Contents
		wantContains(t, secret,
			"kind: Secret", "name: proxmox-cloud-controller-manager", "namespace: kube-system",
			"  config.yaml: |\n    clusters:\n      - url: \"https://pve.local:8006/api2/json\"",
			`token_id: "kubernetes@pve!ccm"`, `token_secret: "s3\"cret"`, `region: "lab"`, "insecure: false")
	})
}

func TestCNI(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		cni       CNI
		want      CNIConfig
		noProxy   bool
		inlineCNI bool
	}{
		{"default flannel", CNI{}, CNIConfig{Name: "flannel", URLs: []string{}}, false, false},
		{"none", CNI{Name: "none"}, CNIConfig{Name: "none", URLs: []string{}}, false, false},
		{"cilium from inline manifests", CNI{Name: "cilium", InlineManifests: []InlineManifest{{Name: "cilium", Contents: "kind: List"}}},
			CNIConfig{Name: "none", URLs: []string{}}, true, true},
		{"cilium from URLs", CNI{Name: "cilium", ManifestURLs: []string{"https://x/cilium.yaml"}},
			CNIConfig{Name: "custom", URLs: []string{"https://x/cilium.yaml"}}, true, false},
		{"cilium keeping kube-proxy", CNI{Name: "cilium", ManifestURLs: []string{"https://x/c.yaml"}, DisableKubeProxy: ptr(false)},
			CNIConfig{Name: "custom", URLs: []string{"https://x/c.yaml"}}, false, false},
		{"custom", CNI{Name: "custom", ManifestURLs: []string{"https://x/calico.yaml"}},
			CNIConfig{Name: "custom", URLs: []string{"https://x/calico.yaml"}}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := baseSpec()
			spec.CNI = tt.cni
			p := mustCompute(t, spec, roomy(), nil)
			if !reflect.DeepEqual(p.Cluster.CNI, tt.want) || p.Cluster.ProxyDisabled != tt.noProxy {
				t.Errorf("cni = %+v proxyDisabled = %v", p.Cluster.CNI, p.Cluster.ProxyDisabled)
			}
			hasInline := slices.ContainsFunc(p.Cluster.InlineManifests, func(m InlineManifest) bool { return m.Name == "cilium" })
			if hasInline != tt.inlineCNI {
				t.Errorf("inline manifests = %+v", p.Cluster.InlineManifests)
			}
		})
	}
}

func TestEndpoint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		endpoint, vip string
		cps           int
		want          string
		sans          []string
		warn          string
	}{
		{endpoint: "", vip: "10.0.0.5", cps: 3, want: "https://10.0.0.5:6443", sans: []string{"10.0.0.5"}},
		{endpoint: "k8s.example.com", vip: "10.0.0.5", cps: 3, want: "https://k8s.example.com:6443", sans: []string{"10.0.0.5", "k8s.example.com", "extra.example.com"}},
		{endpoint: "https://k8s.example.com:8443/", vip: "", cps: 3, want: "https://k8s.example.com:8443", sans: []string{"k8s.example.com", "extra.example.com"}},
		{endpoint: "10.0.0.99:443", vip: "", cps: 1, want: "https://10.0.0.99:443", sans: []string{"10.0.0.99", "extra.example.com"}},
		{endpoint: "", vip: "", cps: 1, want: "https://10.0.0.10:6443", sans: []string{"10.0.0.10"}},
		{endpoint: "", vip: "", cps: 3, want: "https://10.0.0.10:6443", sans: []string{"10.0.0.10"}, warn: "no vip or endpoint is set"},
	}
	for _, tt := range tests {
		t.Run(tt.endpoint+"/"+tt.vip, func(t *testing.T) {
			t.Parallel()
			spec := baseSpec()
			spec.Endpoint, spec.VIP = tt.endpoint, tt.vip
			spec.ControlPlane.Count = ptr(tt.cps)
			if tt.endpoint != "" {
				spec.ExtraSANs = []string{"extra.example.com"}
			}
			p := mustCompute(t, spec, roomy(), nil)
			if p.Cluster.Endpoint != tt.want || p.Endpoints.Kubernetes != tt.want {
				t.Errorf("endpoint = %q", p.Cluster.Endpoint)
			}
			if !slices.Equal(p.Cluster.CertSANs, tt.sans) {
				t.Errorf("certSANs = %v, want %v", p.Cluster.CertSANs, tt.sans)
			}
			// Bootstrap is always against the first control plane itself.
			if p.Endpoints.Bootstrap != "10.0.0.10" {
				t.Errorf("bootstrap endpoint = %q", p.Endpoints.Bootstrap)
			}
			warned := slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, "no vip or endpoint") })
			if warned != (tt.warn != "") {
				t.Errorf("warnings = %v", p.Warnings)
			}
			for _, n := range p.Nodes {
				if (n.Config.VIP != nil) != (tt.vip != "" && n.Role == RoleControlPlane) {
					t.Errorf("%s VIP = %+v", n.Name, n.Config.VIP)
				}
			}
		})
	}
}

func TestImage(t *testing.T) {
	t.Parallel()
	t.Run("extensions and mirrors", func(t *testing.T) {
		t.Parallel()
		spec := baseSpec()
		spec.Image = Image{
			Extensions:        []string{"qemu-guest-agent", "iscsi-tools", "example.org/custom"},
			KernelArgs:        []string{"console=ttyS0"},
			FactoryURL:        "https://factory.internal/",
			InstallerRegistry: "registry.internal:5000/talos",
			ISOStorage:        "isos",
		}
		spec.Hosts[2].ISOStorage = "nfs"
		p := mustCompute(t, spec, roomy(), nil)
		im := p.Cluster.Image
		wantExts := []string{"siderolabs/qemu-guest-agent", "siderolabs/iscsi-tools", "example.org/custom"}
		if !slices.Equal(im.Extensions, wantExts) || !slices.Equal(im.KernelArgs, []string{"console=ttyS0"}) || im.Platform != "nocloud" {
			t.Errorf("image = %+v", im)
		}
		id, err := talosconfig.Schematic{Extensions: wantExts, KernelArgs: []string{"console=ttyS0"}}.ID()
		if err != nil || im.SchematicID != id {
			t.Errorf("schematic = %s, want %s (%v)", im.SchematicID, id, err)
		}
		if want := "https://factory.internal/image/" + id + "/v1.12.5/nocloud-amd64.iso"; im.ISO != want {
			t.Errorf("iso = %s, want %s", im.ISO, want)
		}
		if want := "registry.internal:5000/talos/nocloud-installer/" + id + ":v1.12.5"; im.Installer != want {
			t.Errorf("installer = %s, want %s", im.Installer, want)
		}
		file := "talos-v1.12.5-" + id[:12] + "-nocloud-amd64.iso"
		var got []string
		for _, d := range p.ISOs {
			if d.FileName != file || d.URL != im.ISO || !d.URLKnown || !d.Current {
				t.Errorf("iso %+v", d)
			}
			got = append(got, d.Host+"/"+d.Storage)
		}
		if want := []string{"pve1/isos", "pve2/isos", "pve3/nfs"}; !slices.Equal(got, want) {
			t.Errorf("isos on %v, want %v", got, want)
		}
		if b := node(t, p, "lab-cp-3").VM.Boot; b != (Boot{ISOStorage: "nfs", ISOFile: file}) {
			t.Errorf("boot = %+v", b)
		}
	})
	t.Run("no guest agent", func(t *testing.T) {
		t.Parallel()
		spec := baseSpec()
		spec.Image.Extensions = []string{}
		p := mustCompute(t, spec, roomy(), nil)
		if len(p.Cluster.Image.Extensions) != 0 || p.Nodes[0].VM.Agent {
			t.Errorf("extensions = %v agent = %v", p.Cluster.Image.Extensions, p.Nodes[0].VM.Agent)
		}
		if !slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, "lacks siderolabs/qemu-guest-agent") }) {
			t.Errorf("no warning about the agent: %v", p.Warnings)
		}
	})
	t.Run("ISO only on hosts with nodes", func(t *testing.T) {
		t.Parallel()
		spec := baseSpec()
		spec.ControlPlane.Count = ptr(1)
		spec.WorkerPools = nil
		p := mustCompute(t, spec, roomy(), nil)
		if len(p.ISOs) != 1 || p.ISOs[0].Host != "pve1" || p.ISOs[0].Storage != "local" {
			t.Errorf("isos = %v", p.ISOs)
		}
	})
	t.Run("template clone", func(t *testing.T) {
		t.Parallel()
		spec := baseSpec()
		spec.Image.Template = &Template{VMID: 9000}
		spec.Hosts[1].TemplateVMID = 9001
		p := mustCompute(t, spec, roomy(), nil)
		if len(p.ISOs) != 0 {
			t.Errorf("isos = %v, want none when cloning", p.ISOs)
		}
		if b := node(t, p, "lab-cp-1").VM.Boot; b != (Boot{CloneVMID: 9000, CloneNode: "pve1", FullClone: true}) {
			t.Errorf("cp-1 boot = %+v", b)
		}
		if b := node(t, p, "lab-cp-2").VM.Boot; b != (Boot{CloneVMID: 9001, CloneNode: "pve2", FullClone: true}) {
			t.Errorf("cp-2 boot = %+v", b)
		}
		spec.Image.Template = &Template{VMID: 9000, Node: "pve1", FullClone: ptr(false)}
		p = mustCompute(t, spec, roomy(), nil)
		if b := node(t, p, "lab-cp-3").VM.Boot; b != (Boot{CloneVMID: 9000, CloneNode: "pve1"}) {
			t.Errorf("linked clone boot = %+v", b)
		}
	})
}

func TestManifestsMirrorsAndGitOps(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	spec.RegistryMirrors = map[string]RegistryMirror{
		"ghcr.io":   {Endpoints: []string{"https://ghcr.mirror"}},
		"docker.io": {Endpoints: []string{"https://hub.mirror", "http://hub2.mirror"}, OverridePath: true, SkipFallback: true},
	}
	spec.ExtraManifests = []string{"https://x/metrics-server.yaml"}
	spec.InlineManifests = []InlineManifest{{Name: "ns", Contents: "kind: Namespace"}}
	spec.GitOps = &GitOps{
		Tool:             "flux",
		InstallManifests: []string{"https://github.com/fluxcd/flux2/releases/download/v2.4.0/install.yaml"},
		Repository:       GitRepository{URL: "https://git.example.com/infra.git", Path: "./clusters/lab"},
	}
	p := mustCompute(t, spec, roomy(), nil)
	c := p.Cluster
	wantMirrors := []Mirror{
		{Registry: "docker.io", Endpoints: []string{"https://hub.mirror", "http://hub2.mirror"}, OverridePath: true, SkipFallback: true},
		{Registry: "ghcr.io", Endpoints: []string{"https://ghcr.mirror"}},
	}
	if !reflect.DeepEqual(c.RegistryMirrors, wantMirrors) {
		t.Errorf("mirrors = %+v", c.RegistryMirrors)
	}
	if !slices.Equal(c.ExtraManifests, []string{"https://x/metrics-server.yaml", spec.GitOps.InstallManifests[0]}) {
		t.Errorf("extra manifests = %v", c.ExtraManifests)
	}
	if len(c.InlineManifests) != 2 || c.InlineManifests[0].Name != "ns" || c.InlineManifests[1].Name != "gitops-sync" {
		t.Fatalf("inline manifests = %+v", c.InlineManifests)
	}
	wantContains(t, c.InlineManifests[1].Contents,
		"kind: GitRepository", `url: "https://git.example.com/infra.git"`, `branch: "main"`,
		"kind: Kustomization", `path: "./clusters/lab"`, "namespace: flux-system")

	spec.GitOps.Tool = "argocd"
	spec.GitOps.Repository.Branch = "prod"
	p = mustCompute(t, spec, roomy(), nil)
	wantContains(t, p.Cluster.InlineManifests[1].Contents,
		"kind: Namespace", "name: argocd", "kind: Application", `repoURL: "https://git.example.com/infra.git"`,
		`targetRevision: "prod"`, "selfHeal: true")
}

func TestMACs(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	spec.ControlPlane.Nodes = []NodeSpec{{MAC: "bc:24:11:aa:bb:cc"}, {}, {}}
	p := mustCompute(t, spec, roomy(), nil)
	if m := node(t, p, "lab-cp-1").VM.NICs[0].MAC; m != "BC:24:11:AA:BB:CC" {
		t.Errorf("explicit MAC = %s, want it upper-cased as Proxmox reports it", m)
	}
	seen := map[string]bool{}
	for _, n := range p.Nodes {
		m := n.VM.NICs[0].MAC
		if seen[m] {
			t.Errorf("MAC %s repeats", m)
		}
		seen[m] = true
		if _, ok := unicastMAC(m); !ok {
			t.Errorf("%s MAC %s is not unicast", n.Name, m)
		}
	}
	// Derived MACs are locally administered and depend on cluster and node.
	m := derivedMAC("lab", "lab-cp-2", 0)
	if m != node(t, p, "lab-cp-2").VM.NICs[0].MAC || m[1] != '2' && m[1] != '6' && m[1] != 'A' && m[1] != 'E' {
		t.Errorf("derived MAC %s", m)
	}
	if derivedMAC("other", "lab-cp-2", 0) == m || derivedMAC("lab", "lab-cp-2", 1) == m {
		t.Error("derived MACs collide across clusters or NICs")
	}
}
