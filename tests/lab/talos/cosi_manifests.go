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
// upgrade-k8s` read. The lab renders those whose images follow the
// Kubernetes, CoreDNS and flannel versions, abridged (the full objects are
// k8stemplates' testdata at that tag; the DaemonSet and the Deployment are
// the ones the lab applies at bootstrap, kubeagent_manifests.go): "10-kube-proxy" (DaemonSet,
// ServiceAccount, ClusterRoleBinding) unless kube-proxy is disabled,
// "11-core-dns" (ServiceAccount, Deployment, ConfigMap, Service) unless CoreDNS is, "05-flannel"
// (ServiceAccount, DaemonSet) with the flannel CNI, the manifests named by
// URL that the node fetched (manifest_fetch.go), and the inline manifests. The other manifests (bootstrap token, CSR RBAC, ...) are not
// rendered.
func publishManifests(ctx context.Context, st state.State, snap resourceSnapshot) error {
	var out []*k8s.Manifest

	if snap.active != nil && isControlPlane(snap.active) {
		c := snap.active.Cluster()

		if c.Proxy().Enabled() {
			labels := map[string]any{"k8s-app": "kube-proxy", "tier": "node"}
			m := k8s.NewManifest(k8s.ControlPlaneNamespaceName, "10-kube-proxy")
			m.TypedSpec().Items = []k8s.SingleManifest{
				{Object: bootstrapObjectOr(snap.active, snap.image.Version, "/daemonsets/kube-proxy", workload("DaemonSet", "kube-proxy", labels, "kube-proxy", c.Proxy().Image(), "/usr/local/bin/kube-proxy"))},
				{Object: serviceAccount("kube-proxy")},
				{Object: bootstrapObjectOr(snap.active, snap.image.Version, "/clusterrolebindings/kube-proxy", map[string]any{
					"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
					"metadata": map[string]any{"name": "kube-proxy"},
					"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:node-proxier"},
					"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "kube-proxy", "namespace": "kube-system"}},
				})},
			}
			out = append(out, m)
		}

		if bootstrapManifestsConfig(snap.active, snap.image.Version).TypedSpec().FlannelEnabled {
			m := k8s.NewManifest(k8s.ControlPlaneNamespaceName, "05-flannel")
			m.TypedSpec().Items = []k8s.SingleManifest{
				{Object: serviceAccount("flannel")},
				{Object: bootstrapObjectOr(snap.active, snap.image.Version, "/daemonsets/kube-flannel", workload("DaemonSet", "kube-flannel", map[string]any{"k8s-app": "flannel"}, "kube-flannel", flannelImageOf(snap.image.Version), "/opt/bin/flanneld"))},
			}
			out = append(out, m)
		}

		if c.CoreDNS().Enabled() {
			m := k8s.NewManifest(k8s.ControlPlaneNamespaceName, "11-core-dns")
			m.TypedSpec().Items = []k8s.SingleManifest{
				{Object: serviceAccount("coredns")},
				{Object: bootstrapObjectOr(snap.active, snap.image.Version, "/deployments/coredns", workload("Deployment", "coredns", map[string]any{"k8s-app": "kube-dns"}, "coredns", coreDNSImage(snap.active, snap.image.Version), "/coredns"))},
			}
			// Every object the lab applies for CoreDNS is rendered here, as
			// Talos renders its whole k8stemplates coredns.go set into
			// 11-core-dns and applies only what it renders: the inventory
			// (kubeagent_extra.go) lists them, and a sync prunes what the
			// inventory lists and the render lacks.
			for _, suffix := range []string{"/configmaps/coredns", "/services/kube-dns"} {
				if o := bootstrapObjectOr(snap.active, snap.image.Version, suffix, nil); o != nil {
					m.TypedSpec().Items = append(m.TypedSpec().Items, k8s.SingleManifest{Object: o})
				}
			}
			out = append(out, m)
		}
	}

	if snap.active != nil && isControlPlane(snap.active) {
		out = append(out, snap.urlManifests...)
		out = append(out, inlineManifests(snap.active)...)
	}

	return replaceAll(ctx, st, k8s.NewManifest(k8s.ControlPlaneNamespaceName, "").Metadata(), out)
}

// inlineManifests are the control plane's inlineManifests as Manifest
// resources "99-<name>" (siderolabs/talos v1.13.9
// internal/app/machined/pkg/controllers/k8s/extra_manifest.go:
// processInline, IDs "<priority>-<name>", priority 99 from
// control_plane.go), parsed as Talos parses them (parseManifest). A
// manifest that does not parse renders nothing, as Talos's controller then
// fails it. Manifests named by URL: manifest_fetch.go.
func inlineManifests(cfg config.Provider) []*k8s.Manifest {
	if cfg == nil || !isControlPlane(cfg) {
		return nil
	}

	var out []*k8s.Manifest

	for _, im := range cfg.Cluster().InlineManifests() {
		objs, err := parseManifest([]byte(im.Contents()))
		if err != nil || len(objs) == 0 {
			continue
		}

		m := k8s.NewManifest(k8s.ControlPlaneNamespaceName, "99-"+im.Name())
		for _, o := range objs {
			m.TypedSpec().Items = append(m.TypedSpec().Items, k8s.SingleManifest{Object: o})
		}

		out = append(out, m)
	}

	return out
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
func bootstrapObjectOr(cfg config.Provider, talosVersion, suffix string, fallback map[string]any) map[string]any {
	for _, o := range bootstrapManifests(cfg, talosVersion) {
		if strings.HasSuffix(o.path, suffix) {
			return deepCopy(o.body)
		}
	}

	return fallback
}
