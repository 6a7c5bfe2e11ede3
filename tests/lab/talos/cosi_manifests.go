package talos

import (
	"context"
	"strings"

	"github.com/cosi-project/runtime/pkg/state"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/resources/k8s"
)

// publishManifests: a control plane renders the bootstrap manifests from
// its configuration as Manifest resources of the controlplane namespace
// (siderolabs/talos v1.14.1 internal/app/machined/pkg/controllers/k8s/
// manifest.go render), which `talosctl get manifests` and `talosctl
// upgrade-k8s` read. The lab renders the two whose images follow the
// Kubernetes and CoreDNS versions, abridged (the full objects are
// k8stemplates' testdata at that tag; the DaemonSet and the Deployment are
// the ones the lab applies at bootstrap, kubeagent_manifests.go): "10-kube-proxy" (DaemonSet,
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
				{Object: bootstrapObjectOr(snap.active, "/daemonsets/kube-proxy", workload("DaemonSet", "kube-proxy", labels, "kube-proxy", c.Proxy().Image(), "/usr/local/bin/kube-proxy"))},
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
				{Object: bootstrapObjectOr(snap.active, "/deployments/coredns", workload("Deployment", "coredns", map[string]any{"k8s-app": "kube-dns"}, "coredns", c.CoreDNS().Image(), "/coredns"))},
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

// bootstrapObjectOr is the object the lab applies at bootstrap
// (kubeagent_manifests.go) whose API path ends in suffix, so that what
// `talosctl get manifests` shows and upgrade-k8s syncs is what the cluster
// got (with its tolerations and host network); fallback without one.
func bootstrapObjectOr(cfg config.Provider, suffix string, fallback map[string]any) map[string]any {
	for _, o := range bootstrapManifests(cfg) {
		if strings.HasSuffix(o.path, suffix) {
			return deepCopy(o.body)
		}
	}

	return fallback
}
