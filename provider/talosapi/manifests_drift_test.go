package talosapi_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/tests/kube"
)

// ManifestDrift against the lab's real kube-apiserver: a fresh cluster
// holds its bootstrap manifests as the control plane renders them (no
// drift); a scaled Deployment and a deleted ServiceAccount are drift, a
// label someone added is not (the sync would leave it); after a sync
// nothing drifts again. An object an earlier sync applied that the
// manifests no longer hold is drift too, until a sync prunes it.
func TestManifestDriftFindsEditedAndDeletedObjects(t *testing.T) {
	t.Parallel()

	lab, kc := healthyControlPlane(t, 3*time.Minute)
	ctx, target, o := lab.ctx, lab.target, lab.o
	for _, p := range []string{"/apis/apps/v1/namespaces/kube-system/deployments/coredns", "/api/v1/namespaces/kube-system/serviceaccounts/flannel",
		"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/kube-proxy"} {
		waitObject(ctx, t, kc.Raw, p)
	}

	own, err := talosapi.ReadBootstrapManifests(ctx, target, o)
	if err != nil {
		t.Fatal(err)
	}
	drift, err := talosapi.ManifestDrift(ctx, kc.Raw, "", own)
	if err != nil {
		t.Fatal(err)
	}
	if got := joinChanges(drift); got != "" {
		t.Fatalf("a fresh cluster drifts: %s", got)
	}

	kubeSend(ctx, t, kc.Raw, http.MethodPatch, "/apis/apps/v1/namespaces/kube-system/deployments/coredns", "application/merge-patch+json", `{"spec":{"replicas":5}}`)
	kubeSend(ctx, t, kc.Raw, http.MethodPatch, "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy", "application/merge-patch+json", `{"metadata":{"labels":{"team":"ops"}}}`)
	kubeSend(ctx, t, kc.Raw, http.MethodDelete, "/api/v1/namespaces/kube-system/serviceaccounts/flannel", "application/json", "")

	drift, err = talosapi.ManifestDrift(ctx, kc.Raw, "", own)
	if err != nil {
		t.Fatal(err)
	}
	if got := joinChanges(drift); got != "ServiceAccount kube-system/flannel deleted; Deployment kube-system/coredns changed" {
		t.Fatalf("drift after scaling CoreDNS, labelling kube-proxy and deleting flannel's ServiceAccount: %q", got)
	}

	if _, err := talosapi.SyncManifests(ctx, kc.Raw, own); err != nil {
		t.Fatal(err)
	}
	drift, err = talosapi.ManifestDrift(ctx, kc.Raw, "", own)
	if err != nil {
		t.Fatal(err)
	}
	if got := joinChanges(drift); got != "" {
		t.Fatalf("drift after the sync: %s", got)
	}
	if d := kubeGet(ctx, t, kc.Raw, "/apis/apps/v1/namespaces/kube-system/deployments/coredns"); !strings.Contains(d, `"replicas":2`) {
		t.Fatalf("CoreDNS after the sync:\n%s", d)
	}

	// Objects an earlier sync applied that the manifests dropped: the one
	// the cluster still holds is drift (the next sync prunes it, as
	// upgrade-k8s's does); the one deleted by hand already is not.
	withOld := append(slices.Clone(own),
		map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "left-behind", "namespace": "kube-system"}},
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "gone-already", "namespace": "kube-system"}})
	if _, err := talosapi.SyncManifests(ctx, kc.Raw, withOld); err != nil {
		t.Fatal(err)
	}
	kubeSend(ctx, t, kc.Raw, http.MethodDelete, "/api/v1/namespaces/kube-system/configmaps/gone-already", "application/json", "")
	drift, err = talosapi.ManifestDrift(ctx, kc.Raw, "", own)
	if err != nil {
		t.Fatal(err)
	}
	if got := joinChanges(drift); got != "ServiceAccount kube-system/left-behind dropped" {
		t.Fatalf("drift with an object the manifests dropped: %q", got)
	}
	// A render that is not complete (here: without CoreDNS's manifest, as
	// when a control plane still lacks a URL) reports no "dropped": neither
	// left-behind nor the objects the render lacks.
	partial := slices.DeleteFunc(slices.Clone(own), func(o map[string]any) bool {
		md, _ := o["metadata"].(map[string]any)
		return md["name"] == "coredns"
	})
	if len(partial) == len(own) {
		t.Fatal("the rendered manifests hold no object named coredns")
	}
	drift, err = talosapi.ManifestDriftPartial(ctx, kc.Raw, "", partial)
	if err != nil {
		t.Fatal(err)
	}
	if got := joinChanges(drift); got != "" {
		t.Fatalf("drift from an incomplete render: %q", got)
	}
	if _, err := talosapi.SyncManifests(ctx, kc.Raw, own); err != nil {
		t.Fatal(err)
	}
	drift, err = talosapi.ManifestDrift(ctx, kc.Raw, "", own)
	if err != nil {
		t.Fatal(err)
	}
	if got := joinChanges(drift); got != "" {
		t.Fatalf("drift after the sync pruned the dropped object: %s", got)
	}
}

func kubeSend(ctx context.Context, t *testing.T, kubeconfig []byte, method, path, contentType, body string) {
	t.Helper()
	c, server, err := kube.Client(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, method, server+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close() //nolint:errcheck
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, b)
	}
}
