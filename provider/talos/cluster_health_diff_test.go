package talos

import (
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
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

// The sync waits until a control plane renders the new inline manifests
// (Talos renders them after the configuration is applied, not with it): a
// new one missing or a dropped one still rendered is named.
func TestManifestsRendered(t *testing.T) {
	t.Parallel()
	old := []string{"extraManifest https://example.com/a.yaml", "inlineManifest app sha256:111111111111", "inlineManifest old one sha256:222222222222"}
	in := []string{"inlineManifest app sha256:333333333333", "inlineManifest new sha256:444444444444"}
	for _, c := range []struct {
		ids  []string
		want string
	}{
		{[]string{"10-kube-proxy", "99-app", "99-new"}, ""},
		{[]string{"10-kube-proxy", "99-app", "99-old one"}, "missing 99-new; still rendering 99-old one"},
		{[]string{"99-app", "99-new", "99-https://example.com/a.yaml"}, ""},
	} {
		if got := manifestsRendered(c.ids, old, in); got != c.want {
			t.Errorf("ids %v: %q, want %q", c.ids, got, c.want)
		}
	}
}
