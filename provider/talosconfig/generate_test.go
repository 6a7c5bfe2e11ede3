package talosconfig

import (
	"strings"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
)

func TestGenerateIsDeterministic(t *testing.T) {
	t.Parallel()
	in := baseInput(t, "v1.12.5", RoleControlPlane)
	a, b := mustGenerate(t, in), mustGenerate(t, in)
	if a != b {
		t.Fatalf("two generations from the same input differ")
	}
	in.Secrets = secondBundle(t, "v1.12.5")
	if mustGenerate(t, in) == a {
		t.Errorf("a different secrets bundle produced the same configuration")
	}
}

func TestGenerateCarriesInputs(t *testing.T) {
	t.Parallel()
	for _, role := range []Role{RoleControlPlane, RoleWorker} {
		in := baseInput(t, "v1.12.5", role)
		res, err := Generate(in)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := configloader.NewFromBytes([]byte(res.Config))
		if err != nil {
			t.Fatal(err)
		}
		m := cfg.Machine()
		if m.Type().String() != string(role) {
			t.Errorf("%s: machine type %s", role, m.Type())
		}
		disk := m.Install().Disk()
		if disk != "/dev/sda" || m.Install().Image() != in.InstallImage {
			t.Errorf("%s: install disk %q image %q", role, disk, m.Install().Image())
		}
		if got := cfg.Cluster().Endpoint().String(); got != in.Endpoint {
			t.Errorf("%s: endpoint %s", role, got)
		}
		if cfg.Cluster().Name() != "lab" {
			t.Errorf("%s: cluster name %q", role, cfg.Cluster().Name())
		}
		if !strings.HasSuffix(m.Kubelet().Image(), ":v"+res.KubernetesVersion) || res.KubernetesVersion != "1.35.4" {
			t.Errorf("%s: kubelet image %s, version %s", role, m.Kubelet().Image(), res.KubernetesVersion)
		}
		if !strings.Contains(strings.Join(m.Security().CertSANs(), ","), "k8s.lab.example") {
			t.Errorf("%s: cert SANs %v lack the extra SAN", role, m.Security().CertSANs())
		}
		if cfg.Machine().Security().Token() != in.Secrets.TrustdInfo.Token {
			t.Errorf("%s: configuration does not use the given bundle", role)
		}
	}
}

// The contract follows the node: 1.12 writes a HostnameConfig document and
// grubUseUKICmdline, which a 1.11 node refuses, so a 1.11 config has neither.
func TestGenerateVersionContract(t *testing.T) {
	t.Parallel()
	v12 := mustGenerate(t, baseInput(t, "v1.12.5", RoleWorker))
	v11 := mustGenerate(t, baseInput(t, "v1.11.5", RoleWorker))
	if !strings.Contains(v12, "kind: HostnameConfig") || !strings.Contains(v12, "grubUseUKICmdline: true") {
		t.Errorf("1.12 config lacks HostnameConfig or grubUseUKICmdline")
	}
	if strings.Contains(v11, "kind: HostnameConfig") || strings.Contains(v11, "grubUseUKICmdline") || strings.Contains(v11, "\n---") {
		t.Errorf("1.11 config carries 1.12-only content")
	}
	// an older contract for a node being upgraded: 1.12 node, 1.11 config
	up := baseInput(t, "v1.12.5", RoleWorker)
	up.ContractVersion = "v1.11"
	if got := mustGenerate(t, up); strings.Contains(got, "kind: HostnameConfig") || strings.Contains(got, "grubUseUKICmdline") {
		t.Errorf("contract v1.11 on a 1.12 node still writes 1.12 keys")
	}
	down := baseInput(t, "v1.11.5", RoleWorker)
	down.ContractVersion = "v1.12.0"
	if _, err := Generate(down); err == nil || !strings.Contains(err.Error(), "newer than Talos") {
		t.Errorf("contract newer than the node: %v", err)
	}

	// an installer image older than the contract installs a node that
	// refuses the configuration
	oldImage := baseInput(t, "v1.12.5", RoleWorker)
	oldImage.InstallImage = strings.Replace(oldImage.InstallImage, ":v1.12.5", ":v1.11.6", 1)
	if _, err := Generate(oldImage); err == nil || !strings.Contains(err.Error(), "installs Talos v1.11.6, older than the v1.12 configuration contract") {
		t.Errorf("install image v1.11.6 with a v1.12 contract: %v", err)
	}
	oldImage.ContractVersion = "v1.11"
	if _, err := Generate(oldImage); err != nil {
		t.Errorf("install image v1.11.6 with a v1.11 contract: %v", err)
	}
	for _, image := range []string{"ghcr.io/siderolabs/installer:latest", "ghcr.io/siderolabs/installer@sha256:" + strings.Repeat("ab", 32)} {
		noTag := baseInput(t, "v1.12.5", RoleWorker)
		noTag.InstallImage = image
		if _, err := Generate(noTag); err != nil {
			t.Errorf("install image %s (no version tag): %v", image, err)
		}
	}

	in := baseInput(t, "v1.11.5", RoleWorker)
	in.KubernetesVersion = ""
	res, err := Generate(in)
	if err != nil || res.KubernetesVersion != "1.34.1" {
		t.Errorf("1.11 default Kubernetes = %q, %v", res.KubernetesVersion, err)
	}
}

func TestGeneratePatches(t *testing.T) {
	t.Parallel()
	kubeletArg := "machine:\n  kubelet:\n    extraArgs:\n      rotate-server-certificates: \"true\"\n"
	extraDocs := `apiVersion: v1alpha1
kind: HostnameConfig
auto: off
hostname: cp-1
---
apiVersion: v1alpha1
kind: Layer2VIPConfig
name: 192.168.1.220
link: eth0
`
	res, err := Generate(baseInput(t, "v1.12.5", RoleControlPlane, kubeletArg, extraDocs))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := configloader.NewFromBytes([]byte(res.Config))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Machine().Kubelet().ExtraArgs()["rotate-server-certificates"]; len(got) != 1 || got[0] != "true" {
		t.Errorf("strategic merge patch not applied")
	}
	if h := cfg.NetworkHostnameConfig(); h == nil || h.Hostname() != "cp-1" {
		t.Errorf("HostnameConfig patch not applied")
	}
	if vips := cfg.NetworkVirtualIPConfigs(); len(vips) != 1 || vips[0].Link() != "eth0" {
		t.Errorf("Layer2VIPConfig document not added: %v", vips)
	}

	// $patch: delete removes a document; then the legacy hostname field is allowed.
	res, err = Generate(baseInput(t, "v1.12.5", RoleWorker,
		"apiVersion: v1alpha1\nkind: HostnameConfig\n$patch: delete\n", "machine:\n  network:\n    hostname: w1\n"))
	if err != nil || strings.Contains(res.Config, "kind: HostnameConfig") || !strings.Contains(res.Config, "hostname: w1") {
		t.Errorf("delete patch: %v", err)
	}

	// JSON6902 works on a single-document (1.11) configuration...
	jsonPatch := `[{"op": "add", "path": "/machine/nodeLabels", "value": {"zone": "a"}}]`
	res, err = Generate(baseInput(t, "v1.11.5", RoleWorker, jsonPatch))
	if err != nil {
		t.Fatalf("JSON6902 on a 1.11 config: %v", err)
	}
	if !strings.Contains(res.Config, "zone: a") {
		t.Errorf("JSON6902 patch not applied")
	}
	// ...and YAML-form JSON6902 too.
	kind, err := DetectPatch("- op: remove\n  path: /machine/nodeLabels\n")
	if err != nil || kind != JSON6902 {
		t.Errorf("DetectPatch(yaml json6902) = %s, %v", kind, err)
	}
	if kind, _ := DetectPatch(kubeletArg); kind != StrategicMerge {
		t.Errorf("DetectPatch(strategic) = %s", kind)
	}
}

func TestGenerateErrors(t *testing.T) {
	t.Parallel()
	const leak = "p4ssw0rd-value"
	noDisk := baseInput(t, "v1.12.5", RoleWorker)
	noDisk.InstallDisk = ""
	for _, tc := range []struct {
		name string
		in   Input
		want []string
	}{
		{"json6902 on 1.12", baseInput(t, "v1.12.5", RoleWorker, `[{"op":"add","path":"/machine/nodeLabels","value":{"a":"b"}}]`),
			[]string{"patch 1 of 1", "multi-document", "strategic merge patch"}},
		{"hostname in v1alpha1 on 1.12", baseInput(t, "v1.12.5", RoleWorker, "machine:\n  network:\n    hostname: w1\n"),
			[]string{"after patch 1 of 1", "static hostname is already set", "HostnameConfig"}},
		{"HostnameConfig without auto off", baseInput(t, "v1.12.5", RoleWorker, "apiVersion: v1alpha1\nkind: HostnameConfig\nhostname: w1\n"),
			[]string{"'auto' and 'hostname' cannot be set", "auto: off"}},
		{"second patch breaks validation", baseInput(t, "v1.12.5", RoleWorker,
			"machine:\n  nodeLabels:\n    a: b\n", "machine:\n  kubelet:\n    nodeIP:\n      validSubnets: [\"10.0.0.0/33\"]\n"),
			[]string{"after patch 2 of 2", "10.0.0.0/33"}},
		{"unknown key quotes no value", baseInput(t, "v1.12.5", RoleWorker, "machine:\n  tokn: "+leak+"\n"),
			[]string{"patch 1 of 1", "unknown keys machine.tokn"}},
		{"not a patch", baseInput(t, "v1.12.5", RoleWorker, "{{{"), []string{"patch 1 of 1", "neither"}},
		{"empty patch", baseInput(t, "v1.12.5", RoleWorker, " "), []string{"patch 1 of 1", "empty"}},
		{"no install disk in metal mode", noDisk, []string{"install disk"}},
		{"kubernetes too new", func() Input { in := baseInput(t, "v1.11.5", RoleWorker); in.KubernetesVersion = "1.35.0"; return in }(),
			[]string{"too new", "1.34.1"}},
		{"endpoint without scheme", func() Input { in := baseInput(t, "v1.12.5", RoleWorker); in.Endpoint = "192.168.1.220:6443"; return in }(),
			[]string{"https://"}},
		{"install disk not a path", func() Input { in := baseInput(t, "v1.12.5", RoleWorker); in.InstallDisk = "sda"; return in }(),
			[]string{"/dev/sda", "/dev/vda"}},
		{"no secrets", func() Input { in := baseInput(t, "v1.12.5", RoleWorker); in.Secrets = nil; return in }(),
			[]string{"secrets bundle is missing"}},
		{"bad role", func() Input { in := baseInput(t, "v1.12.5", RoleWorker); in.Role = "master"; return in }(),
			[]string{"controlplane", "worker"}},
		// Talos 1.14 nodes run 1.13-contract configurations: 1.14 documents
		// are refused with the v1alpha1 field to use instead.
		{"1.14 document in a patch", baseInput(t, "v1.14.1", RoleWorker,
			"apiVersion: v1alpha1\nkind: KubeletConfig\nimage: ghcr.io/siderolabs/kubelet:v1.37.0\n"),
			[]string{"patch 1 of 1", "KubeletConfig is a Talos 1.14 document", "v1.13 contract", ".machine.kubelet"}},
		{"1.14 document after a 1.13 one", baseInput(t, "v1.14.1", RoleWorker,
			"machine:\n  nodeLabels:\n    a: b\n", "apiVersion: v1alpha1\nkind: KubeSpanConfig\n---\napiVersion: v1alpha1\nkind: UnattendedInstallConfig\n"),
			[]string{"patch 2 of 2", "UnattendedInstallConfig is a Talos 1.14 document", ".machine.install"}},
		// The node checks its Kubernetes images with its own version.
		{"kubelet newer than the node's Talos", baseInput(t, "v1.13.9", RoleWorker,
			"machine:\n  kubelet:\n    image: ghcr.io/siderolabs/kubelet:v1.37.0\n"),
			[]string{"after patch 1 of 1", "kubelet image is not valid", "too new to be used with Talos 1.13.9"}},
		{"talos too new", func() Input { in := baseInput(t, "v1.12.5", RoleWorker); in.TalosVersion = "v1.15.0"; return in }(),
			[]string{"v1.8.0 to v1.14.x", "the newest is v1.14.1"}},
	} {
		_, err := Generate(tc.in)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", tc.name, err, w)
			}
		}
		if strings.Contains(err.Error(), leak) {
			t.Errorf("%s: error quotes a patch value", tc.name)
		}
		assertNoSecrets(t, tc.name+" error", err.Error(), bundleSecrets(testBundle(t, "v1.12.5")))
	}
}

// A cloud-mode node booted from a ready disk image needs no install disk.
func TestGenerateCloudModeWithoutInstallDisk(t *testing.T) {
	t.Parallel()
	in := baseInput(t, "v1.12.5", RoleWorker)
	in.InstallDisk = ""
	in.Mode = Cloud
	if _, err := Generate(in); err != nil {
		t.Errorf("cloud mode without install disk: %v", err)
	}
}

func TestValidateRejectsBrokenConfig(t *testing.T) {
	t.Parallel()
	cfg := mustGenerate(t, baseInput(t, "v1.12.5", RoleWorker))
	broken := strings.Replace(cfg, "disk: /dev/sda", "disk: \"\"", 1)
	if _, err := Validate(broken, Metal, "v1.12.5"); err == nil || !strings.Contains(err.Error(), "install disk") {
		t.Errorf("Validate(metal, no disk) = %v", err)
	}
	if _, err := Validate(broken, Cloud, "v1.12.5"); err != nil {
		t.Errorf("Validate(cloud, no disk) = %v", err)
	}
	if Metal.InContainer() || Cloud.InContainer() || !Metal.RequiresInstall() || Cloud.RequiresInstall() {
		t.Errorf("runtime modes misreport themselves")
	}
}
