package talosconfig

import (
	"slices"
	"strings"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
)

func manifestsConfig(t *testing.T, role Role, patch string) config.Provider {
	t.Helper()
	cfg, err := configloader.NewFromBytes([]byte(mustGenerate(t, baseInput(t, "v1.14.1", role, patch))))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

const manifestsBefore = `cluster:
  extraManifests: [https://example.com/a.yaml]
  inlineManifests:
    - name: app
      contents: |
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: app, namespace: kube-system}
        data: {level: "1"}
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: gone}
        data: {x: "1"}
    - name: same
      contents: |
        apiVersion: rbac.authorization.k8s.io/v1
        kind: ClusterRole
        metadata: {name: reader}
        rules: []
`

const manifestsAfter = `cluster:
  extraManifests: [https://example.com/b.yaml]
  inlineManifests:
    - name: app
      contents: |
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: app, namespace: kube-system}
        data: {level: "2"}
        ---
        apiVersion: v1
        kind: Secret
        metadata: {name: new, namespace: kube-system}
        stringData: {token: hunter2}
    - name: same
      contents: |
        apiVersion: rbac.authorization.k8s.io/v1
        kind: ClusterRole
        metadata: {name: reader}
        rules: []
`

// A change of an inline manifest's contents changes its line (by name, with
// a digest, never the contents); other manifests keep theirs; a worker has
// none (it renders no bootstrap manifests).
func TestBootstrapManifestInputs(t *testing.T) {
	t.Parallel()
	before := BootstrapManifestInputs(manifestsConfig(t, RoleControlPlane, manifestsBefore))
	after := BootstrapManifestInputs(manifestsConfig(t, RoleControlPlane, manifestsAfter))
	if len(before) != 4 || !strings.HasPrefix(before[0], "extraManifest sha256:") ||
		!strings.HasPrefix(before[1], "inlineManifest app sha256:") || !strings.HasPrefix(before[3], "kube-proxy, CoreDNS and CNI settings sha256:") {
		t.Fatalf("lines %q", before)
	}
	if before[0] == after[0] || before[1] == after[1] || before[2] != after[2] || before[3] != after[3] {
		t.Errorf("only the app manifest and the URL changed:\n%q\n%q", before, after)
	}
	if strings.Contains(strings.Join(after, "\n"), "hunter2") || strings.Contains(strings.Join(after, "\n"), "example.com") {
		t.Errorf("a manifest's contents in the lines: %q", after)
	}
	if w := BootstrapManifestInputs(manifestsConfig(t, RoleWorker, manifestsAfter)); w != nil {
		t.Errorf("worker: %q", w)
	}
	// A Kubernetes upgrade (kube-proxy's image) syncs through
	// kubernetesVersion: not a change of these lines.
	bumped := BootstrapManifestInputs(manifestsConfig(t, RoleControlPlane, "cluster:\n  proxy:\n    image: registry.k8s.io/kube-proxy:v1.37.1\n"))
	if plain := BootstrapManifestInputs(manifestsConfig(t, RoleControlPlane, "cluster:\n  proxy:\n    image: registry.k8s.io/kube-proxy:v1.36.3\n")); !slices.Equal(bumped, plain) {
		t.Errorf("a new kube-proxy image changes the lines:\n%q\n%q", bumped, plain)
	}
	proxy := BootstrapManifestInputs(manifestsConfig(t, RoleControlPlane, "cluster:\n  proxy:\n    disabled: true\n"))
	if plain := BootstrapManifestInputs(manifestsConfig(t, RoleControlPlane, "cluster:\n  proxy:\n    disabled: false\n")); slices.Equal(proxy, plain) {
		t.Errorf("disabling kube-proxy does not change the lines: %q", proxy)
	}
}

// The preview lists the inline manifests' objects the sync creates,
// changes and prunes, and says which other manifests change.
func TestPreviewManifestSync(t *testing.T) {
	t.Parallel()
	p, err := PreviewManifestSync(manifestsConfig(t, RoleControlPlane, manifestsBefore), manifestsConfig(t, RoleControlPlane, manifestsAfter))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Create, []string{"Secret kube-system/new"}) || !slices.Equal(p.Change, []string{"ConfigMap kube-system/app"}) ||
		!slices.Equal(p.Prune, []string{"ConfigMap default/gone"}) {
		t.Errorf("preview %+v", p)
	}
	s := p.String()
	for _, want := range []string{"creates 1 (Secret kube-system/new)", "changes 1 (ConfigMap kube-system/app)", "prunes 1 (ConfigMap default/gone)",
		"the objects of https://example.com/b.yaml (known once the nodes fetch it)", "prunes the objects of https://example.com/a.yaml"} {
		if !strings.Contains(s, want) {
			t.Errorf("preview %q lacks %q", s, want)
		}
	}
	if strings.Contains(s, "ClusterRole") {
		t.Errorf("an unchanged object is listed: %q", s)
	}

	same, err := PreviewManifestSync(manifestsConfig(t, RoleControlPlane, manifestsAfter), manifestsConfig(t, RoleControlPlane, manifestsAfter))
	if err != nil || !same.Empty() {
		t.Errorf("no change: %+v, %v", same, err)
	}

	bad := "cluster:\n  inlineManifests:\n    - name: broken\n      contents: |\n        kind: ConfigMap\n        data: {a: 1}\n"
	if _, err := PreviewManifestSync(manifestsConfig(t, RoleControlPlane, manifestsAfter), manifestsConfig(t, RoleControlPlane, bad)); err == nil ||
		!strings.Contains(err.Error(), `inline manifest "broken"`) {
		t.Errorf("an object without a name: %v", err)
	}
}
