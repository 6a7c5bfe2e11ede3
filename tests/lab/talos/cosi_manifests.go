package talos

import (
	"context"

	"github.com/cosi-project/runtime/pkg/state"

	"github.com/siderolabs/talos/pkg/machinery/resources/k8s"
)

// publishManifests: a control plane renders the bootstrap manifests from
// its configuration as Manifest resources of the controlplane namespace
// (siderolabs/talos v1.14.1 internal/app/machined/pkg/controllers/k8s/
// manifest.go render), which `talosctl get manifests` and `talosctl
// upgrade-k8s` read. The lab renders the two whose images follow the
// Kubernetes and CoreDNS versions, abridged to what identifies each object
// (names, labels, selector, container image; the full objects are
// k8stemplates' testdata at that tag): "10-kube-proxy" (DaemonSet,
// ServiceAccount, ClusterRoleBinding) unless kube-proxy is disabled, and
// "11-core-dns" (ServiceAccount, Deployment) unless CoreDNS is. The other
// manifests (bootstrap token, CSR RBAC, flannel, ...) are not rendered.
func publishManifests(ctx context.Context, st state.State, snap resourceSnapshot) error {
	var out []*k8s.Manifest

	if snap.active != nil && isControlPlane(snap.active) {
		c := snap.active.Cluster()

		if c.Proxy().Enabled() {
			labels := map[string]any{"k8s-app": "kube-proxy", "tier": "node"}
			m := k8s.NewManifest(k8s.ControlPlaneNamespaceName, "10-kube-proxy")
			m.TypedSpec().Items = []k8s.SingleManifest{
				{Object: workload("DaemonSet", "kube-proxy", labels, "kube-proxy", c.Proxy().Image(), "/usr/local/bin/kube-proxy")},
				{Object: serviceAccount("kube-proxy")},
				{Object: map[string]any{
					"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
					"metadata": map[string]any{"name": "kube-proxy"},
					"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:node-proxier"},
					"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "kube-proxy", "namespace": "kube-system"}},
				}},
			}
			out = append(out, m)
		}

		if c.CoreDNS().Enabled() {
			m := k8s.NewManifest(k8s.ControlPlaneNamespaceName, "11-core-dns")
			m.TypedSpec().Items = []k8s.SingleManifest{
				{Object: serviceAccount("coredns")},
				{Object: workload("Deployment", "coredns", map[string]any{"k8s-app": "kube-dns"}, "coredns", c.CoreDNS().Image(), "/coredns")},
			}
			out = append(out, m)
		}
	}

	return replaceAll(ctx, st, k8s.NewManifest(k8s.ControlPlaneNamespaceName, "").Metadata(), out)
}

func serviceAccount(name string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": name, "namespace": "kube-system"}}
}

// workload is an abridged DaemonSet or Deployment of kube-system with one
// container.
func workload(kind, name string, labels map[string]any, container, image, command string) map[string]any {
	return map[string]any{
		"apiVersion": "apps/v1", "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": "kube-system", "labels": labels},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{
					"serviceAccountName": name,
					"containers":         []any{map[string]any{"name": container, "image": image, "command": []any{command}}},
				},
			},
		},
	}
}
