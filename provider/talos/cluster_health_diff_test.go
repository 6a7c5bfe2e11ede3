package talos

import (
	"slices"
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// The other nodes are a hint for the update at hand: a change of the list
// alone (removed nodes gone on the next run, nodes added later in a
// rollout) checks nothing again.
func TestClusterHealthDiffIgnoresOtherNodes(t *testing.T) {
	t.Parallel()
	old := ClusterHealthArgs{ControlPlanes: []string{"10.0.0.10"}, OtherNodes: []string{"10.0.0.11"}}
	in := ClusterHealthArgs{ControlPlanes: []string{"10.0.0.10"}}
	if d := diffClusterHealth(old, in); d.HasChanges {
		t.Errorf("otherNodes alone reported as a change: %+v", d.DetailedDiff)
	}
	in.ControlPlanes = []string{"10.0.0.10", "10.0.0.12"}
	if d := diffClusterHealth(old, in); !d.HasChanges || len(d.DetailedDiff) != 1 {
		t.Errorf("controlPlanes change: %+v", d.DetailedDiff)
	}
}

// The nodes and the endpoint show as one line; credentials alone are no
// change.
func TestClusterHealthDiffIsOneLine(t *testing.T) {
	t.Parallel()
	ep := "https://10.0.0.5:6443"
	kc1, kc2 := "kubeconfig-1", "kubeconfig-2"
	old := ClusterHealthArgs{ControlPlanes: []string{"10.0.0.10"}, Workers: []string{"10.0.0.20"}, KubernetesEndpoint: &ep, Kubeconfig: &kc1}
	r := requiresLine(old)
	old.Requires = &r
	if r != "1 control plane, 1 worker; API https://10.0.0.5:6443" {
		t.Errorf("requires %q", r)
	}

	in := old
	in.Kubeconfig = &kc2
	in.ClientConfiguration = ClientConfiguration{ClientCertificate: "renewed"}
	if d := diffClusterHealth(old, in); d.HasChanges {
		t.Errorf("renewed credentials reported: %+v", d.DetailedDiff)
	}

	in.Workers = []string{"10.0.0.20", "10.0.0.21"}
	r2 := requiresLine(in)
	in.Requires = &r2
	if d := diffClusterHealth(old, in); len(d.DetailedDiff) != 1 || d.DetailedDiff["requires"].Kind != p.Update {
		t.Errorf("a new worker: %+v", d.DetailedDiff)
	}

	// Same counts, another address: the list itself.
	in.Workers = []string{"10.0.0.22"}
	r3 := requiresLine(in)
	in.Requires = &r3
	if d := diffClusterHealth(old, in); len(d.DetailedDiff) != 1 || d.DetailedDiff["workers"].Kind != p.Update {
		t.Errorf("another worker address: %+v", d.DetailedDiff)
	}
}

// A recheck reason checks again whenever it is set, also when the previous
// update had the same one (nodes down again); dropping it is no change.
func TestClusterHealthDiffRecheck(t *testing.T) {
	t.Parallel()
	why := "VMs that were not running: demo-cp-2"
	old := ClusterHealthArgs{ControlPlanes: []string{"10.0.0.10"}}
	in := old
	in.Recheck = &why
	for _, prev := range []*string{nil, &why} {
		old.Recheck = prev
		if d := diffClusterHealth(old, in); !d.HasChanges || d.DetailedDiff["recheck"].Kind != p.Update {
			t.Errorf("recheck after %v: %+v", prev, d.DetailedDiff)
		}
	}
	dropped := in
	dropped.Recheck = nil
	if d := diffClusterHealth(in, dropped); d.HasChanges {
		t.Errorf("recheck dropped reported: %+v", d.DetailedDiff)
	}
}

// A Kubernetes upgrade updates the check, which then syncs the bootstrap
// manifests; state from before the input recorded no version, and a
// provider upgrade alone previews no change.
func TestClusterHealthDiffKubernetesVersion(t *testing.T) {
	t.Parallel()
	v1, v2, kc := "v1.36.3", "v1.37.0", "kubeconfig"
	old := ClusterHealthArgs{ControlPlanes: []string{"10.0.0.10"}, Kubeconfig: &kc}

	in := old
	in.KubernetesVersion = &v1
	if d := diffClusterHealth(old, in); d.HasChanges {
		t.Errorf("state without a version: %+v", d.DetailedDiff)
	}
	if !manifestsDue(old, in) {
		t.Error("an update of state without a version does not sync")
	}

	old.KubernetesVersion = &v1
	if d := diffClusterHealth(old, in); d.HasChanges || manifestsDue(old, in) {
		t.Errorf("same version: %+v, sync %v", d.DetailedDiff, manifestsDue(old, in))
	}

	in.KubernetesVersion = &v2
	d := diffClusterHealth(old, in)
	if _, ok := d.DetailedDiff["kubernetesVersion"]; !ok || !d.HasChanges {
		t.Errorf("upgrade: %+v", d.DetailedDiff)
	}
	if !manifestsDue(old, in) {
		t.Error("upgrade does not sync")
	}

	in.Kubeconfig = nil
	if manifestsDue(old, in) {
		t.Error("sync without a kubeconfig")
	}
}

// An edited inline manifest (or any other input of the bootstrap manifests)
// updates the check and syncs, without a version change; state from before
// the input recorded none: no change, no sync.
func TestClusterHealthDiffBootstrapManifests(t *testing.T) {
	t.Parallel()
	v, kc := "v1.37.0", "kubeconfig"
	old := ClusterHealthArgs{ControlPlanes: []string{"10.0.0.10"}, Kubeconfig: &kc, KubernetesVersion: &v}
	in := old
	in.BootstrapManifests = []string{"inlineManifest app sha256:111111111111"}
	if d := diffClusterHealth(old, in); d.HasChanges || manifestsDue(old, in) {
		t.Errorf("state without the lines: %+v, sync %v", d.DetailedDiff, manifestsDue(old, in))
	}

	old.BootstrapManifests = in.BootstrapManifests
	if d := diffClusterHealth(old, in); d.HasChanges || manifestsDue(old, in) {
		t.Errorf("same lines: %+v, sync %v", d.DetailedDiff, manifestsDue(old, in))
	}

	in.BootstrapManifests = []string{"inlineManifest app sha256:222222222222"}
	d := diffClusterHealth(old, in)
	if d.DetailedDiff["bootstrapManifests"].Kind != p.Update || len(d.DetailedDiff) != 1 {
		t.Errorf("an edited inline manifest: %+v", d.DetailedDiff)
	}
	if !manifestsDue(old, in) {
		t.Error("an edited inline manifest does not sync")
	}

	in.BootstrapManifests = nil // every inline manifest removed: their objects are pruned
	if !manifestsDue(old, in) || !diffClusterHealth(old, in).HasChanges {
		t.Error("removing the manifests does not sync")
	}
}

// The sync waits until a control plane renders the new manifests (Talos
// renders them after the configuration is applied, not with it): a new
// inline manifest or URL missing, an inline manifest still rendered with
// its old objects, or a dropped one still rendered is named; URLs only by
// their digests.
func TestManifestsRendered(t *testing.T) {
	t.Parallel()
	urlA, urlB := "https://example.com/a.yaml?token=s3cret", "https://example.com/b.yaml"
	objs := func(level string) []map[string]any {
		return []map[string]any{{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "app"}, "data": map[string]any{"level": level}}}
	}
	appNew := talosconfig.ObjectsDigest(objs("2"))
	old := []string{"extraManifest " + talosconfig.InputDigest(urlA), "inlineManifest app sha256:111111111111", "inlineManifest old one sha256:222222222222"}
	in := []string{"extraManifest " + talosconfig.InputDigest(urlB), "inlineManifest app sha256:333333333333 objects " + appNew, "inlineManifest new sha256:444444444444"}
	m := func(id string, o []map[string]any) talosapi.RenderedManifest {
		return talosapi.RenderedManifest{ID: id, Objects: o}
	}
	for _, c := range []struct {
		ms   []talosapi.RenderedManifest
		want string
	}{
		{[]talosapi.RenderedManifest{m("10-kube-proxy", nil), m("99-app", objs("2")), m("99-new", nil), m("99-"+urlB, nil)}, ""},
		{[]talosapi.RenderedManifest{m("10-kube-proxy", nil), m("99-app", objs("1")), m("99-new", nil), m("99-"+urlB, nil)},
			"still rendering the old contents of 99-app"},
		{[]talosapi.RenderedManifest{m("10-kube-proxy", nil), m("99-app", objs("2")), m("99-old one", nil), m("99-"+urlA, nil)},
			"missing extraManifests URL " + talosconfig.InputDigest(urlB) + ", 99-new; still rendering extraManifests URL " + talosconfig.InputDigest(urlA) + ", 99-old one" +
				"; Talos fetches URLs on the control plane and retries a failed download: `talosctl -n <control plane> dmesg` shows ExtraManifestController's \"error downloading\" lines"},
	} {
		got := manifestsRendered(c.ms, old, in)
		if got != c.want {
			t.Errorf("manifests %v: %q, want %q", c.ms, got, c.want)
		}
		if strings.Contains(got, "s3cret") || strings.Contains(got, "example.com") {
			t.Errorf("a URL in %q", got)
		}
	}
}

// State written before inline manifest lines carried their objects' digest
// is no change by itself; a refresh's drift lines are, until the update
// (which syncs) records the program's lines.
func TestClusterHealthDiffObjectsDigestAndDrift(t *testing.T) {
	t.Parallel()
	v, kc := "v1.37.0", "kubeconfig"
	old := ClusterHealthArgs{ControlPlanes: []string{"10.0.0.10"}, Kubeconfig: &kc, KubernetesVersion: &v,
		BootstrapManifests: []string{"inlineManifest app sha256:111111111111", "kube-proxy, CoreDNS and CNI settings sha256:222222222222"}}
	in := old
	in.BootstrapManifests = []string{"inlineManifest app sha256:111111111111 objects sha256:333333333333", "kube-proxy, CoreDNS and CNI settings sha256:222222222222"}
	if d := diffClusterHealth(old, in); d.HasChanges || manifestsDue(old, in) {
		t.Errorf("objects digest added by a provider upgrade: %+v, sync %v", d.DetailedDiff, manifestsDue(old, in))
	}
	in.BootstrapManifests[0] = "inlineManifest app sha256:999999999999 objects sha256:333333333333"
	if !manifestsDue(old, in) {
		t.Error("an edit under old state does not sync")
	}

	old.BootstrapManifests = withDrift(in.BootstrapManifests, []talosapi.ManifestChange{{Action: "changed", Subject: "Deployment kube-system/coredns"}})
	if last := old.BootstrapManifests[len(old.BootstrapManifests)-1]; last != "drift: Deployment kube-system/coredns differs from the rendered manifests" {
		t.Errorf("drift line %q", last)
	}
	d := diffClusterHealth(old, in)
	if d.DetailedDiff["bootstrapManifests"].Kind != p.Update || !manifestsDue(old, in) {
		t.Errorf("drift recorded by a refresh: %+v, sync %v", d.DetailedDiff, manifestsDue(old, in))
	}
	if again := withDrift(old.BootstrapManifests, nil); !slices.Equal(again, in.BootstrapManifests) {
		t.Errorf("a refresh without drift keeps %q", again)
	}

	// An object the manifests dropped and the cluster still holds: the
	// update syncs, which prunes it.
	old.BootstrapManifests = withDrift(in.BootstrapManifests, []talosapi.ManifestChange{{Action: "dropped", Subject: "ServiceAccount kube-system/old"}})
	if last := old.BootstrapManifests[len(old.BootstrapManifests)-1]; last != "drift: ServiceAccount kube-system/old is no longer in the rendered manifests (the update deletes it, as talosctl upgrade-k8s does)" {
		t.Errorf("dropped line %q", last)
	}
	if d := diffClusterHealth(old, in); d.DetailedDiff["bootstrapManifests"].Kind != p.Update || !manifestsDue(old, in) {
		t.Errorf("a dropped object recorded by a refresh: %+v, sync %v", d.DetailedDiff, manifestsDue(old, in))
	}
}

// In a Kubernetes upgrade the sync waits until kube-proxy is rendered with
// an image other than the old version's.
func TestProxyRendered(t *testing.T) {
	t.Parallel()
	proxy := func(image string) []talosapi.RenderedManifest {
		return []talosapi.RenderedManifest{{ID: "10-kube-proxy", Objects: []map[string]any{
			{"apiVersion": "v1", "kind": "ServiceAccount"},
			{"apiVersion": "apps/v1", "kind": "DaemonSet", "spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "kube-proxy", "image": image}}}}}},
		}}}
	}
	if got := proxyRendered(proxy("registry.k8s.io/kube-proxy:v1.36.3"), "v1.36.3", "v1.37.0", "registry.k8s.io/kube-proxy:v1.37.0"); got != "10-kube-proxy still renders registry.k8s.io/kube-proxy:v1.36.3" {
		t.Errorf("old image rendered: %q", got)
	}
	// The configuration itself names an image at the old tag (a patch pins
	// cluster.proxy.image, e.g. a mirror): that render is final, no wait.
	if got := proxyRendered(proxy("mirror.example/kube-proxy:v1.36.3"), "v1.36.3", "v1.37.0", "mirror.example/kube-proxy:v1.36.3"); got != "" {
		t.Errorf("pinned image at the old tag: %q, want no wait", got)
	}
	// Pinned elsewhere, but the old default still rendered: wait.
	if got := proxyRendered(proxy("registry.k8s.io/kube-proxy:v1.36.3"), "v1.36.3", "v1.37.0", "mirror.example/kube-proxy:v1.36.3"); got == "" {
		t.Error("old default rendered while the configuration pins another image: no wait")
	}
	for _, c := range []struct {
		ms       []talosapi.RenderedManifest
		old, new string
	}{
		{proxy("registry.k8s.io/kube-proxy:v1.37.0"), "v1.36.3", "v1.37.0"},
		{proxy("registry.k8s.io/kube-proxy:v1.36.3"), "v1.36.3", "v1.36.3"}, // no upgrade
		{proxy("registry.k8s.io/kube-proxy:v1.36.3"), "", "v1.37.0"},        // state without a version
		{nil, "v1.36.3", "v1.37.0"},                                         // kube-proxy disabled
	} {
		if got := proxyRendered(c.ms, c.old, c.new, ""); got != "" {
			t.Errorf("%s -> %s: %q, want no wait", c.old, c.new, got)
		}
	}
}
