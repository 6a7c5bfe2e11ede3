package plan

import (
	"strings"
	"testing"
)

func TestControlPlaneCount(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		count *int // nil: left out
		nodes int
		want  int    // control planes planned
		err   string // or this error
	}{
		{want: 3},
		{count: ptr(0), err: "controlPlane.count: 0 control planes: a Talos cluster needs 1, 3 or 5"},
		{count: ptr(1), want: 1},
		{count: ptr(3), want: 3},
		{count: ptr(5), want: 5},
		{count: ptr(2), err: "controlPlane.count: 2 control planes: etcd needs an odd number"},
		{count: ptr(4), err: "use 1, 3 or 5"},
		{count: ptr(7), err: "7 control planes"},
		{count: ptr(-1), err: "cannot be negative"},
		{nodes: 3, want: 3},
		{count: ptr(0), nodes: 3, want: 3},
		{nodes: 2, err: "controlPlane.nodes: 2 control planes"},
		{count: ptr(1), nodes: 3, err: "controlPlane.count: count is 1 but 3 nodes are listed"},
	} {
		t.Run("", func(t *testing.T) {
			t.Parallel()
			spec := baseSpec()
			spec.Hosts = append(spec.Hosts, Host{Node: "pve4"}, Host{Node: "pve5"})
			spec.ControlPlane.Count = tt.count
			for range tt.nodes {
				spec.ControlPlane.Nodes = append(spec.ControlPlane.Nodes, NodeSpec{})
			}
			f := facts(1<<20, "pve1", "pve2", "pve3", "pve4", "pve5")
			if tt.err != "" {
				wantContains(t, computeErr(t, spec, f, nil), tt.err)
				return
			}
			p := mustCompute(t, spec, f, nil)
			got := 0
			for _, n := range p.Nodes {
				if n.Role == RoleControlPlane {
					got++
				}
			}
			if got != tt.want {
				t.Errorf("%d control planes, want %d", got, tt.want)
			}
		})
	}
}

func TestSpecValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		edit func(*Spec)
		want []string
	}{
		{"no name", func(s *Spec) { s.Name = "" }, []string{"clusterName:", "needs a name"}},
		{"name not a label", func(s *Spec) { s.Name = "My.Cluster" }, []string{"clusterName:", "not a DNS label"}},
		{"hostname too long", func(s *Spec) { s.Name = strings.Repeat("a", 58) }, []string{"workerPools[0].count:", "-workers-1\" is not a DNS label", "shorten the cluster or pool name"}},
		{"bad talos version", func(s *Spec) { s.TalosVersion = "latest" }, []string{"talosVersion:", `"latest" is not a semantic version`}},
		{"unsupported kubernetes", func(s *Spec) { s.KubernetesVersion = "1.28.0" }, []string{"kubernetesVersion:", "Kubernetes 1.28.0 is too old to be used with Talos 1.12.5"}},
		{"unsupported talos", func(s *Spec) { s.TalosVersion = "v1.7.0" }, []string{"talosVersion:", "talos version v1.7.0 is not supported"}},
		{"talos newer than the provider", func(s *Spec) { s.TalosVersion = "v1.15.0" }, []string{"talosVersion:", "upgrade the provider"}},
		{"no hosts", func(s *Spec) { s.Hosts = nil }, []string{"hosts:", "list at least one node"}},
		{"host without node", func(s *Spec) { s.Hosts[1].Node = "" }, []string{"hosts[1].node:", "needs the Proxmox node name"}},
		{"duplicate host", func(s *Spec) { s.Hosts[2].Node = "pve1" }, []string{"hosts[2].node:", `host "pve1" is also hosts[0]`}},
		{"pool without name", func(s *Spec) { s.WorkerPools[0].Name = "" }, []string{"workerPools[0].name:", "needs a name"}},
		{"pool named cp", func(s *Spec) { s.WorkerPools[0].Name = "cp" }, []string{"workerPools[0].name:", "reserved"}},
		{"duplicate pool", func(s *Spec) { s.WorkerPools = append(s.WorkerPools, WorkerPool{Name: "workers"}) }, []string{"workerPools[1].name:", "also used by workerPools[0]"}},
		{"duplicate node name", func(s *Spec) {
			s.WorkerPools = append(s.WorkerPools, WorkerPool{Name: "db", Nodes: []NodeSpec{{Name: "lab-workers-1"}}})
		}, []string{"workerPools[1].nodes[0]:", `"lab-workers-1" is used twice`}},
		{"memory in GiB by mistake", func(s *Spec) { s.ControlPlane.Size.MemoryMiB = ptr(8) }, []string{"controlPlane.size.memory:", "8 MiB is below Talos' minimum of 2048 MiB", "the unit is MiB"}},
		{"one core control plane", func(s *Spec) { s.ControlPlane.Size.Cores = ptr(1) }, []string{"controlPlane.size.cores:", "1 vCPUs is below Talos' minimum of 2"}},
		{"tiny disk", func(s *Spec) { s.WorkerPools[0].Size.DiskGiB = ptr(5) }, []string{"workerPools[0].size.diskSize:", "minimum system disk of 10 GiB"}},
		{"zero disk", func(s *Spec) { s.ControlPlane.Size.DiskGiB = ptr(0) }, []string{"controlPlane.size.diskSize:", "0 GiB is not a size", "leave diskSize out for the default 20 GiB"}},
		{"zero memory", func(s *Spec) { s.WorkerPools[0].Size.MemoryMiB = ptr(0) }, []string{"workerPools[0].size.memory:", "0 MiB is not a size", "default 4096 MiB"}},
		{"zero cores", func(s *Spec) { s.WorkerPools[0].Size.Cores = ptr(0) }, []string{"workerPools[0].size.cores:", "0 is not a size", "default 2"}},
		{"zero sockets", func(s *Spec) { s.ControlPlane.Size.Sockets = ptr(0) }, []string{"controlPlane.size.sockets:", "0 is not a size", "default 1"}},
		{"negative sockets", func(s *Spec) { s.ControlPlane.Size.Sockets = ptr(-2) }, []string{"controlPlane.size.sockets:", "-2 sockets"}},
		{"zero data disk", func(s *Spec) { s.WorkerPools[0].DataDisks = []DataDisk{{SizeGiB: 0}} }, []string{"workerPools[0].dataDisks[0].size:", "0 GiB: a data disk needs"}},
		{"kvm64", func(s *Spec) { s.VM.CPUType = "kvm64" }, []string{"vm.cpuType:", "lacks x86-64-v2"}},
		{"bad tag", func(s *Spec) { s.VM.Tags = []string{"-x"} }, []string{"vm.tags[0]:", "not a Proxmox tag"}},
		{"a tag of the component's own", func(s *Spec) { s.VM.Tags = []string{"ok", "stack-1234"} }, []string{"vm.tags[1]:", `"stack-1234" is one of the tags the component finds its VMs by`}},
		{"a role tag", func(s *Spec) { s.VM.Tags = []string{"Worker"} }, []string{"vm.tags[0]:", "choose another tag"}},
		{"ide disks", func(s *Spec) { s.DiskInterface = "ide" }, []string{"diskInterface:", `use "scsi", "virtio" or "sata"`}},
		{"install disk not a path", func(s *Spec) { s.InstallDisk = "sda" }, []string{"installDisk:", "not a device path"}},
		{"metal platform", func(s *Spec) { s.Image.Platform = "metal" }, []string{"image.platform:", "use \"nocloud\""}},
		{"duplicate extension", func(s *Spec) { s.Image.Extensions = []string{"qemu-guest-agent", "siderolabs/qemu-guest-agent"} }, []string{"image.extensions:", `"siderolabs/qemu-guest-agent" is listed twice`}},
		{"bad extension", func(s *Spec) { s.Image.Extensions = []string{"Not An Extension"} }, []string{"image.extensions:", "not an official extension name"}},
		{"kernel args in one string", func(s *Spec) { s.Image.KernelArgs = []string{"console=ttyS0 net.ifnames=0"} }, []string{"image.kernelArgs:", "its own list entry"}},
		{"factory URL", func(s *Spec) { s.Image.FactoryURL = "factory.local" }, []string{"image.factoryUrl:"}},
		{"installer registry with scheme", func(s *Spec) { s.Image.InstallerRegistry = "https://reg.local" }, []string{"image.installerRegistry:", "without a scheme"}},
		{"template vmid", func(s *Spec) { s.Image.Template = &Template{VMID: 42} }, []string{"image.template.vmId:", "100-999999999"}},
		{"http endpoint", func(s *Spec) { s.Endpoint = "http://k8s.local:6443" }, []string{"endpoint:", "not an https URL"}},
		{"endpoint port", func(s *Spec) { s.Endpoint = "k8s.local:99999" }, []string{"endpoint:", "invalid port"}},
		{"bad SAN", func(s *Spec) { s.ExtraSANs = []string{"https://k8s.local"} }, []string{"extraSans[0]:"}},
		{"vlan", func(s *Spec) { s.Network.VLAN = 5000 }, []string{"network.vlan:", "1-4094"}},
		{"mtu", func(s *Spec) { s.Network.MTU = 70000 }, []string{"network.mtu:"}},
		{"secondary without bridge", func(s *Spec) { s.Network.Secondary = &NIC{} }, []string{"network.secondary.bridge:"}},
		{"bad label", func(s *Spec) { s.WorkerPools[0].Labels = map[string]string{"bad key!": "x"} }, []string{"workerPools[0].labels:"}},
		{"bad taint effect", func(s *Spec) { s.ControlPlane.Taints = []Taint{{Key: "a", Effect: "Never"}} }, []string{"controlPlane.taints:", `invalid taint effect: "Never"`}},
		{"duplicate taint key", func(s *Spec) {
			s.WorkerPools[0].Taints = []Taint{{Key: "a", Effect: "NoSchedule"}, {Key: "a", Effect: "NoExecute"}}
		}, []string{"workerPools[0].taints[1]:", "given twice"}},
		{"empty patch", func(s *Spec) { s.Patches = []string{"  "} }, []string{"patches[0]:", "the patch is empty"}},
		{"patches for a node that does not exist", func(s *Spec) { s.NodePatches = map[string][]string{"lab-cp-9": {"machine: {}"}} }, []string{"nodePatches:", `"lab-cp-9"`, "nodes are: lab-cp-1"}},
		{"duplicate vmid", func(s *Spec) { s.ControlPlane.Nodes = []NodeSpec{{VMID: 200}, {VMID: 201}, {VMID: 200}} }, []string{"controlPlane.nodes[2].vmId:", "also given to controlPlane.nodes[0]"}},
		{"multicast mac", func(s *Spec) { s.ControlPlane.Nodes = []NodeSpec{{MAC: "01:00:5e:00:00:01"}} }, []string{"controlPlane.nodes[0].mac:", "not a unicast MAC"}},
		{"cilium without manifests", func(s *Spec) { s.CNI.Name = "cilium" }, []string{"cni.manifestUrls:", "needs its manifests"}},
		{"flannel with manifests", func(s *Spec) { s.CNI.ManifestURLs = []string{"https://x/cni.yaml"} }, []string{"cni.name:", "takes no manifests"}},
		{"flannel without kube-proxy", func(s *Spec) { s.CNI.DisableKubeProxy = ptr(true) }, []string{"cni.disableKubeProxy:"}},
		{"unknown cni", func(s *Spec) { s.CNI.Name = "calico" }, []string{"cni.name:", `"calico" is not a CNI choice`}},
		{"proxmox CCM without CCM", func(s *Spec) {
			s.CloudControllerManager = CloudControllerManager{Enabled: ptr(false), Proxmox: &ProxmoxCCM{}}
		}, []string{"cloudControllerManager.proxmox:", "set cloudControllerManager.enabled"}},
		{"proxmox CCM token id", func(s *Spec) {
			s.CloudControllerManager.Proxmox = &ProxmoxCCM{URL: "https://pve:8006/api2/json", TokenID: "ccm", TokenSecret: "x"}
		}, []string{"cloudControllerManager.proxmox.tokenId:", "kubernetes@pve!ccm"}},
		{"mirror without endpoints", func(s *Spec) { s.RegistryMirrors = map[string]RegistryMirror{"docker.io": {}} }, []string{`registryMirrors["docker.io"].endpoints:`}},
		{"mirror endpoint not a URL", func(s *Spec) {
			s.RegistryMirrors = map[string]RegistryMirror{"docker.io": {Endpoints: []string{"mirror.local"}}}
		}, []string{`registryMirrors["docker.io"].endpoints[0]:`, "not an http(s) URL"}},
		{"mirror key is a URL", func(s *Spec) {
			s.RegistryMirrors = map[string]RegistryMirror{"https://docker.io": {Endpoints: []string{"https://m"}}}
		}, []string{"not a registry host"}},
		{"extra manifest not a URL", func(s *Spec) { s.ExtraManifests = []string{"./local.yaml"} }, []string{"extraManifests[0]:"}},
		{"inline manifest without name", func(s *Spec) { s.InlineManifests = []InlineManifest{{Contents: "x: y"}} }, []string{"inlineManifests[0].name:"}},
		{"inline manifest name clash", func(s *Spec) {
			s.CNI = CNI{Name: "cilium", InlineManifests: []InlineManifest{{Name: "cilium", Contents: "a: b"}}}
			s.InlineManifests = []InlineManifest{{Name: "cilium", Contents: "c: d"}}
		}, []string{"inlineManifests[0].name:", `"cilium" is used twice`}},
		{"mirror password without user", func(s *Spec) {
			s.RegistryMirrors = map[string]RegistryMirror{"docker.io": {Endpoints: []string{"https://m.local"}, Auth: &RegistryAuth{Password: "x"}}}
		}, []string{`registryMirrors["docker.io"].auth.username:`, "password is set without a username"}},
		{"mirror auth empty", func(s *Spec) {
			s.RegistryMirrors = map[string]RegistryMirror{"docker.io": {Endpoints: []string{"https://m.local"}, Auth: &RegistryAuth{}}}
		}, []string{`registryMirrors["docker.io"].auth:`, "no credentials"}},
		{"mirror token and user", func(s *Spec) {
			s.RegistryMirrors = map[string]RegistryMirror{"docker.io": {Endpoints: []string{"https://m.local"}, Auth: &RegistryAuth{Username: "u", Password: "p", IdentityToken: "t"}}}
		}, []string{`registryMirrors["docker.io"].auth.identityToken:`, "give one way"}},
		{"gitops tool", func(s *Spec) { s.GitOps = &GitOps{Tool: "jenkins"} }, []string{"gitOps.tool:"}},
		{"gitops without install", func(s *Spec) { s.GitOps = &GitOps{Tool: "flux", Repository: GitRepository{URL: "https://g/r"}} }, []string{"gitOps.installManifests:"}},
		{"data disk size", func(s *Spec) { s.WorkerPools[0].DataDisks = []DataDisk{{}} }, []string{"workerPools[0].dataDisks[0].size:"}},
		{"data disk volume name", func(s *Spec) { s.WorkerPools[0].DataDisks = []DataDisk{{SizeGiB: 10, Volume: "My Vol"}} }, []string{"workerPools[0].dataDisks[0].volume:"}},
		{"data disk volume name too long", func(s *Spec) {
			s.WorkerPools[0].DataDisks = []DataDisk{{SizeGiB: 10, Volume: strings.Repeat("v", 35)}}
		}, []string{"workerPools[0].dataDisks[0].volume:", "at most 34 characters"}},
		{"volumes on old Talos", func(s *Spec) {
			s.TalosVersion, s.KubernetesVersion = "v1.9.6", "v1.32.3"
			s.WorkerPools[0].DataDisks = []DataDisk{{SizeGiB: 10, Volume: "data"}}
		}, []string{"workerPools[0].dataDisks[0].volume:", "need Talos v1.10 or newer"}},
		{"too many sata disks", func(s *Spec) {
			s.DiskInterface = "sata"
			s.WorkerPools[0].DataDisks = make([]DataDisk, 6)
			for i := range s.WorkerPools[0].DataDisks {
				s.WorkerPools[0].DataDisks[i].SizeGiB = 1
			}
		}, []string{"workerPools[0].dataDisks:", "at most 5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := baseSpec()
			tt.edit(&spec)
			wantContains(t, computeErr(t, spec, roomy(), nil), tt.want...)
		})
	}
}

func TestSecretsStayOutOfErrorsAndState(t *testing.T) {
	t.Parallel()
	const secret = "5ec2e7-70ken-5ec2e7"
	spec := baseSpec()
	spec.CloudControllerManager.Proxmox = &ProxmoxCCM{URL: "https://pve:8006/api2/json", TokenID: "kubernetes@pve!ccm", TokenSecret: secret}
	spec.InlineManifests = []InlineManifest{{Name: "creds", Contents: "password: " + secret}}
	spec.Patches = []string{"machine:\n  env:\n    TOKEN: " + secret}
	p := mustCompute(t, spec, roomy(), nil)
	st, err := jsonString(p.State())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(st, secret) {
		t.Errorf("state holds the secret: %s", st)
	}
	// A spec that fails keeps the secret out of the message too.
	spec.VIP = "nope"
	spec.CloudControllerManager.Proxmox.TokenID = "bad"
	if msg := computeErr(t, spec, roomy(), nil); strings.Contains(msg, secret) {
		t.Errorf("error holds the secret: %s", msg)
	}
}

func ptr[T any](v T) *T { return &v }
