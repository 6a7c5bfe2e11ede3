package talosconfig

import (
	"reflect"
	"strings"
	"testing"
)

const secretsPatch = `machine:
  env:
    https_proxy: http://proxyuser:pr0xy-pass@proxy.lab:3128
  registries:
    config:
      registry.lab:
        auth:
          username: robot
          password: r3g1stry-pass
  files:
    - content: file-s3cret-content
      permissions: 0o600
      path: /var/etc/app.conf
      op: create
  nodeLabels:
    node.kubernetes.io/pool: blue
  kubelet:
    extraArgs:
      rotate-server-certificates: "true"
    extraConfig:
      someFutureSigningKey: k3let-extra-key
  systemDiskEncryption:
    state:
      provider: luks2
      keys:
        - slot: 0
          static:
            passphrase: st4te-pa55phrase
cluster:
  extraManifests:
    - https://deploy:url-pa55word@git.lab/manifests/app.yaml
    - https://git.lab/raw/ccm.yaml?private_token=j0in-token-arg
  extraManifestHeaders:
    Authorization: Bearer h34der-token
  inlineManifests:
    - name: ccm-credentials
      contents: "apiVersion: v1\nkind: Secret\nstringData:\n  token: inl1ne-secret\n"
---
apiVersion: v1alpha1
kind: ExtensionServiceConfig
name: tailscale
environment:
  - TS_AUTHKEY=tskey-auth-s3cret
configFiles:
  - content: "login-server=https://hs.lab\nauthkey=c0nfig-file-s3cret\n"
    mountPath: /etc/tailscale/config
---
apiVersion: v1alpha1
kind: UserVolumeConfig
name: data
provisioning:
  diskSelector:
    match: "!system_disk"
  maxSize: 10GiB
encryption:
  provider: luks2
  keys:
    - slot: 0
      static:
        passphrase: us3r-vol-pa55phrase
---
apiVersion: v1alpha1
kind: RegistryAuthConfig
name: ghcr.io
identityToken: id3ntity-t0ken
---
apiVersion: v1alpha1
kind: HCloudVIPConfig
name: 192.168.1.221
link: eth0
apiToken: hcl0ud-api-t0ken
`

var patchSecrets = []string{
	"url-pa55word", "pr0xy-pass", "r3g1stry-pass", "file-s3cret-content", "h34der-token", "inl1ne-secret", "tskey-auth-s3cret",
	"st4te-pa55phrase", "us3r-vol-pa55phrase", "c0nfig-file-s3cret", "id3ntity-t0ken", "hcl0ud-api-t0ken", "j0in-token-arg",
	"k3let-extra-key",
}

func TestRedactHidesEverySecret(t *testing.T) {
	t.Parallel()
	b := testBundle(t, "v1.12.5")
	cfg := mustGenerate(t, baseInput(t, "v1.12.5", RoleControlPlane, secretsPatch))
	view, err := Redact(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, e := range view {
		all.WriteString(e.Path + "=" + e.Value + "\n")
	}
	assertNoSecrets(t, "redacted view", all.String(), append(bundleSecrets(b), patchSecrets...))

	m := view.Map()
	for _, path := range []string{
		"machine.token", "machine.ca.key", "cluster.secret", "cluster.token", "cluster.secretboxEncryptionSecret",
		"cluster.serviceAccount.key", "cluster.ca.key", "cluster.aggregatorCA.key", "cluster.etcd.ca.key",
		"machine.env.https_proxy", "machine.registries.config.registry.lab.auth.password", // dotted host below
		"machine.systemDiskEncryption.state.keys[0].static.passphrase",
		"UserVolumeConfig/data: encryption.keys[0].static.passphrase",
		"ExtensionServiceConfig/tailscale: configFiles[0].content",
		"RegistryAuthConfig/ghcr.io: identityToken",
		"HCloudVIPConfig/192.168.1.221: apiToken",
		"cluster.extraManifests[1]",
		"machine.kubelet.extraConfig.someFutureSigningKey",
	} {
		if strings.Contains(path, "registry.lab") {
			path = `machine.registries.config["registry.lab"].auth.password`
		}
		if v, ok := m[path]; !ok || !strings.HasPrefix(v, "(sensitive, hmac:") {
			t.Errorf("%s = %q, want a sensitive fingerprint", path, v)
		}
	}
	for path, want := range map[string]string{
		"machine.kubelet.extraArgs.rotate-server-certificates": "true",
		"cluster.clusterName":  "lab",
		"machine.install.disk": "/dev/sda",
		"machine.type":         "controlplane",
		`machine.nodeLabels["node.kubernetes.io/pool"]`:              "blue",
		"cluster.inlineManifests[0].name":                            "ccm-credentials",
		"ExtensionServiceConfig/tailscale: apiVersion":               "v1alpha1",
		"machine.install.image":                                      "factory.talos.dev/nocloud-installer/ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515:v1.12.5",
		`machine.registries.config["registry.lab"].auth.username`:    "",
		"machine.systemDiskEncryption.state.keys[0].slot":            "0",
		"machine.systemDiskEncryption.state.provider":                "luks2",
		"UserVolumeConfig/data: encryption.keys[0].slot":             "0",
		"ExtensionServiceConfig/tailscale: configFiles[0].mountPath": "/etc/tailscale/config",
		"HCloudVIPConfig/192.168.1.221: link":                        "eth0",
	} {
		got, ok := m[path]
		if !ok {
			t.Errorf("view lacks %s", path)
			continue
		}
		if want != "" && got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	if v := m["ExtensionServiceConfig/tailscale: environment[0]"]; !strings.HasPrefix(v, "(sensitive") {
		t.Errorf("extension environment = %q, want sensitive", v)
	}
	if v := m["cluster.ca.crt"]; !strings.Contains(v, "bytes, sha256:") {
		t.Errorf("a certificate is shown as %q, want a size and digest", v)
	}

	// Error scrubbing knows every secret the configuration holds (keys are
	// in it base64-encoded, not as PEM).
	sensitive := strings.Join(SensitiveValues(cfg), "\n")
	for i, secret := range append(bundleSecrets(b), patchSecrets...) {
		if strings.Contains(cfg, secret) && !strings.Contains(sensitive, secret) {
			t.Errorf("SensitiveValues misses secret %d of the test (%d chars)", i, len(secret))
		}
	}

	again, _ := Redact(cfg)
	if !reflect.DeepEqual(view, again) {
		t.Errorf("Redact is not stable")
	}
}

// Fingerprints change with the secret and are keyed per cluster.
func TestRedactFingerprints(t *testing.T) {
	t.Parallel()
	a := mustGenerate(t, baseInput(t, "v1.12.5", RoleWorker))
	in := baseInput(t, "v1.12.5", RoleWorker)
	in.Secrets = secondBundle(t, "v1.12.5")
	b := mustGenerate(t, in)
	va, _ := Redact(a)
	vb, _ := Redact(b)
	if va.Map()["machine.token"] == vb.Map()["machine.token"] {
		t.Errorf("different tokens have the same fingerprint")
	}
	// same value, different cluster secret: different fingerprint
	if sensitiveValue([]byte("k1"), "x") == sensitiveValue([]byte("k2"), "x") || sensitiveValue(nil, "x") != "(sensitive)" {
		t.Errorf("fingerprints are not keyed")
	}
}

func TestChangedPaths(t *testing.T) {
	t.Parallel()
	base := baseInput(t, "v1.12.5", RoleControlPlane, "machine:\n  kubelet:\n    extraArgs:\n      cloud-provider: external\n")
	withArg := baseInput(t, "v1.12.5", RoleControlPlane,
		"machine:\n  kubelet:\n    extraArgs:\n      cloud-provider: external\n      rotate-server-certificates: \"true\"\n")
	vip := "apiVersion: v1alpha1\nkind: Layer2VIPConfig\nname: 192.168.1.220\nlink: eth0\n"
	vipMoved := "apiVersion: v1alpha1\nkind: Layer2VIPConfig\nname: 192.168.1.220\nlink: eth1\n"
	manifests := func(urls ...string) string {
		return "cluster:\n  externalCloudProvider:\n    enabled: true\n    manifests: [" + strings.Join(urls, ", ") + "]\n"
	}
	cfg := func(in Input, extra ...string) string {
		in.Patches = append(append([]string{}, in.Patches...), extra...)
		return mustGenerate(t, in)
	}
	otherSecrets := base
	otherSecrets.Secrets = secondBundle(t, "v1.12.5")

	for _, tc := range []struct {
		name     string
		old, new string
		want     []string
	}{
		{"same", cfg(base), cfg(base), nil},
		{"kubelet arg", cfg(base), cfg(withArg), []string{"machine.kubelet.extraArgs.rotate-server-certificates"}},
		{"document added", cfg(base), cfg(base, vip), []string{"Layer2VIPConfig/192.168.1.220"}},
		{"document field", cfg(base, vip), cfg(base, vipMoved), []string{"Layer2VIPConfig/192.168.1.220: link"}},
		{"document removed", cfg(base, vip), cfg(base), []string{"Layer2VIPConfig/192.168.1.220"}},
		{"list item", cfg(base, manifests("https://a/1.yaml", "https://a/2.yaml")), cfg(base, manifests("https://a/1.yaml", "https://a/3.yaml")),
			[]string{"cluster.externalCloudProvider.manifests[1]"}},
		{"list item added", cfg(base, manifests("https://a/1.yaml")), cfg(base, manifests("https://a/1.yaml", "https://a/3.yaml")),
			[]string{"cluster.externalCloudProvider.manifests[1]"}},
	} {
		got, err := ChangedPaths(tc.old, tc.new)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: ChangedPaths = %q, want %q", tc.name, got, tc.want)
		}
	}

	// New secrets: the secret paths are listed, their values never.
	got, err := ChangedPaths(cfg(base), cfg(otherSecrets))
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(got, "\n")
	for _, p := range []string{"machine.token", "cluster.secret", "cluster.ca.key", "cluster.id"} {
		if !strings.Contains(joined, p+"\n") && !strings.HasSuffix(joined, p) {
			t.Errorf("secret rotation does not list %s", p)
		}
	}
	assertNoSecrets(t, "changed paths", joined, append(bundleSecrets(testBundle(t, "v1.12.5")), bundleSecrets(secondBundle(t, "v1.12.5"))...))
}

func TestRedactRejectsGarbage(t *testing.T) {
	t.Parallel()
	if _, err := Redact("machine: [unclosed s3cr3t"); err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("Redact(garbage) = %v", err)
	}
	if _, err := ChangedPaths("", "version: v1alpha1\n"); err == nil {
		t.Errorf("ChangedPaths accepted an empty configuration")
	}
}

// Values that came from a user's secret are hidden wherever they are,
// also under keys that look harmless.
func TestRedactWithExtraSecrets(t *testing.T) {
	t.Parallel()
	in := baseInput(t, "v1.12.5", RoleWorker)
	in.Patches = []string{"machine:\n  nodeLabels:\n    plain: shown-value\n    upstream: hidden-value-123\n    note: prefix-hidden-value-123-suffix\n"}
	cfg := mustGenerate(t, in)
	plain, err := Redact(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Map()["machine.nodeLabels.upstream"] != "hidden-value-123" {
		t.Fatalf("without extras the value shows: %q", plain.Map()["machine.nodeLabels.upstream"])
	}
	v, err := RedactWith(cfg, []string{"hidden-value-123"})
	if err != nil {
		t.Fatal(err)
	}
	m := v.Map()
	for _, p := range []string{"machine.nodeLabels.upstream", "machine.nodeLabels.note"} {
		if !strings.HasPrefix(m[p], "(sensitive") {
			t.Errorf("%s = %q", p, m[p])
		}
	}
	if m["machine.nodeLabels.plain"] != "shown-value" {
		t.Errorf("plain = %q", m["machine.nodeLabels.plain"])
	}
}
