package talosapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/tests/kube"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// SyncManifests against the lab's real kube-apiserver: a first sync creates
// the objects (a ConfigMap before the DaemonSet that reads it), a sync with
// a new image configures the DaemonSet and leaves the rest unchanged, an
// object the manifests no longer hold is deleted, and an object another
// inventory owns is refused.
func TestSyncManifestsAppliesAndPrunes(t *testing.T) {
	t.Parallel()

	lab, kc := healthyControlPlane(t, 3*time.Minute)
	ctx, target, o := lab.ctx, lab.target, lab.o

	// Talos applies its bootstrap manifests (kube-proxy, flannel, CoreDNS)
	// once the API serves, as the lab does: the syncs below find them.
	waitObject(ctx, t, kc.Raw, "/apis/apps/v1/namespaces/kube-system/deployments/coredns")

	manifests := func(image string, withExtra bool) []map[string]any {
		var out []map[string]any
		add := func(js string) {
			var m map[string]any
			if err := json.Unmarshal([]byte(js), &m); err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
		add(`{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"kube-proxy","namespace":"kube-system"},
			"spec":{"selector":{"matchLabels":{"k8s-app":"kube-proxy","tier":"node"}},"template":{"metadata":{"labels":{"k8s-app":"kube-proxy","tier":"node"}},
			"spec":{"containers":[{"name":"kube-proxy","image":"` + image + `"}]}}}}`)
		add(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"kube-proxy","namespace":"kube-system"},"data":{"mode":"iptables"}}`)
		if withExtra {
			add(`{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"left-behind","namespace":"kube-system"}}`)
		}
		return out
	}

	changes, err := talosapi.SyncManifests(ctx, kc.Raw, manifests("registry.k8s.io/kube-proxy:v1.35.4", true))
	if err != nil {
		t.Fatal(err)
	}
	if got := joinChanges(changes); got != "ConfigMap kube-system/kube-proxy created; DaemonSet kube-system/kube-proxy configured; ServiceAccount kube-system/left-behind created" {
		t.Fatalf("first sync: %s", got)
	}

	changes, err = talosapi.SyncManifests(ctx, kc.Raw, manifests("registry.k8s.io/kube-proxy:v1.36.3", false))
	if err != nil {
		t.Fatal(err)
	}
	if got := joinChanges(changes); got != "ConfigMap kube-system/kube-proxy unchanged; DaemonSet kube-system/kube-proxy configured; ServiceAccount kube-system/left-behind deleted" {
		t.Fatalf("second sync: %s", got)
	}
	ds := kubeGet(ctx, t, kc.Raw, "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy")
	if !strings.Contains(ds, `"image":"registry.k8s.io/kube-proxy:v1.36.3"`) || !strings.Contains(ds, `"config.k8s.io/owning-inventory":"talos-bootstrap-manifests-inventory"`) {
		t.Fatalf("DaemonSet after the sync:\n%s", ds)
	}
	if inv := kubeGet(ctx, t, kc.Raw, "/api/v1/namespaces/kube-system/configmaps/talos-bootstrap-manifests-inventory"); !strings.Contains(inv, `"kube-system_kube-proxy_apps_DaemonSet":""`) ||
		strings.Contains(inv, "left-behind") {
		t.Fatalf("inventory after the sync:\n%s", inv)
	}

	// An object another inventory owns (here one made by a GitOps tool) is
	// refused, and left as it was.
	kubeDo(ctx, t, kc.Raw, http.MethodPost, "/api/v1/namespaces/kube-system/serviceaccounts",
		`{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"theirs","namespace":"kube-system","annotations":{"config.k8s.io/owning-inventory":"flux"}}}`)
	theirs := append(manifests("registry.k8s.io/kube-proxy:v1.36.3", false),
		map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "theirs", "namespace": "kube-system"}})
	_, err = talosapi.SyncManifests(ctx, kc.Raw, theirs)
	if err == nil || !strings.Contains(err.Error(), `ServiceAccount kube-system/theirs belongs to the inventory "flux"`) {
		t.Fatalf("sync over another inventory's object: %v", err)
	}
	if sa := kubeGet(ctx, t, kc.Raw, "/api/v1/namespaces/kube-system/serviceaccounts/theirs"); !strings.Contains(sa, `"config.k8s.io/owning-inventory":"flux"`) {
		t.Fatalf("the refused sync changed the object:\n%s", sa)
	}

	// The control plane's own manifests (what upgrade-k8s syncs): rendered
	// from the configuration it runs, so a new kube-proxy image in the
	// configuration is a new image in the manifests, and the sync moves the
	// DaemonSet to it; CoreDNS, which Talos created with its inventory's
	// annotation, stays unchanged.
	own, err := talosapi.ReadBootstrapManifests(ctx, target, o)
	if err != nil {
		t.Fatal(err)
	}
	if got := imagesOf(own); got != "DaemonSet kube-flannel ghcr.io/siderolabs/flannel:v0.27.4; DaemonSet kube-proxy registry.k8s.io/kube-proxy:v1.35.4; Deployment coredns registry.k8s.io/coredns/coredns:v1.13.2" {
		t.Fatalf("the control plane's manifests: %s", got)
	}
	patched := nodeConfig(t, talosconfig.RoleControlPlane, netip.MustParseAddr(target.Node), "/dev/sda", simtest.Version, "cluster:\n  proxy:\n    image: registry.k8s.io/kube-proxy:v1.35.5\n")
	if _, err := talosapi.Apply(ctx, target, talosapi.ApplyRequest{Config: patched}, o); err != nil {
		t.Fatal(err)
	}
	// The image a patch pins is what the node's configuration names (the
	// render wait of a Kubernetes upgrade takes it as final).
	if img, err := talosapi.ConfiguredProxyImage(ctx, target, o); err != nil || img != "registry.k8s.io/kube-proxy:v1.35.5" {
		t.Fatalf("ConfiguredProxyImage after pinning kube-proxy v1.35.5: %q, %v", img, err)
	}
	own, err = talosapi.ReadBootstrapManifests(ctx, target, o)
	if err != nil {
		t.Fatal(err)
	}
	changes, err = talosapi.SyncManifests(ctx, kc.Raw, own)
	if err != nil {
		t.Fatal(err)
	}
	if got := joinChanges(changes); !strings.Contains(got, "DaemonSet kube-system/kube-proxy configured") || !strings.Contains(got, "Deployment kube-system/coredns unchanged") {
		t.Fatalf("sync of the control plane's manifests: %s", got)
	}
	if ds := kubeGet(ctx, t, kc.Raw, "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy"); !strings.Contains(ds, `"image":"registry.k8s.io/kube-proxy:v1.35.5"`) {
		t.Fatalf("DaemonSet after syncing the new configuration's manifests:\n%s", ds)
	}

	// The removed-API pre-check counts objects per resource.version.group;
	// a version the API does not serve counts nothing.
	counts, err := talosapi.CountObjects(ctx, target, []string{"daemonsets.v1.apps", "workloads.v1alpha2.scheduling.k8s.io", "configmaps.v1"}, o)
	if err != nil {
		t.Fatal(err)
	}
	if counts["daemonsets.v1.apps"] != 2 || counts["configmaps.v1"] == 0 || len(counts) != 2 {
		t.Fatalf("CountObjects = %v, want 2 DaemonSets (kube-proxy, kube-flannel), some ConfigMaps and nothing else", counts)
	}
}

// imagesOf lists the workloads of manifests with their first image.
func imagesOf(objs []map[string]any) string {
	var parts []string
	for _, o := range objs {
		spec, _ := o["spec"].(map[string]any)
		tmpl, _ := spec["template"].(map[string]any)
		ps, _ := tmpl["spec"].(map[string]any)
		cs, _ := ps["containers"].([]any)
		if len(cs) == 0 {
			continue
		}
		c, _ := cs[0].(map[string]any)
		md, _ := o["metadata"].(map[string]any)
		parts = append(parts, fmt.Sprintf("%v %v %v", o["kind"], md["name"], c["image"]))
	}
	return strings.Join(parts, "; ")
}

// waitObject waits until an object exists (a real cluster's controllers
// act asynchronously, and so do the lab's).
func waitObject(ctx context.Context, t *testing.T, kubeconfig []byte, path string) {
	t.Helper()

	c, server, err := kube.Client(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}

	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, server+path, nil)
		if err != nil {
			t.Fatal(err)
		}

		if resp, err := c.Do(req); err == nil {
			resp.Body.Close() //nolint:errcheck
			if resp.StatusCode == http.StatusOK {
				return
			}
		}

		select {
		case <-ctx.Done():
			t.Fatalf("%s never appeared: %v", path, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func kubeGet(ctx context.Context, t *testing.T, kubeconfig []byte, path string) string {
	t.Helper()
	return kubeDo(ctx, t, kubeconfig, http.MethodGet, path, "")
}

func kubeDo(ctx context.Context, t *testing.T, kubeconfig []byte, method, path, body string) string {
	t.Helper()
	c, server, err := kube.Client(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, method, server+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if method == http.MethodPatch {
		req.Header.Set("Content-Type", "application/strategic-merge-patch+json")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close() //nolint:errcheck
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, b)
	}
	return string(b)
}

func joinChanges(cs []talosapi.ManifestChange) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, c.String())
	}
	return strings.Join(parts, "; ")
}
