package talosapi

import (
	"context"
	"fmt"
	"maps"

	"github.com/cosi-project/runtime/pkg/resource"
	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/siderolabs/talos/pkg/machinery/resources/k8s"
)

// ReadBootstrapManifests reads the bootstrap manifests a control plane
// renders from its configuration (the Manifest resources of the
// controlplane namespace, `talosctl get manifests`): the objects Talos
// created at bootstrap, in its order (by manifest ID), rendered for the
// configuration the node runs now. `talosctl upgrade-k8s` syncs these
// (go-kubernetes kubernetes/manifests.GetBootstrapManifests), and so does
// SyncManifests.
func ReadBootstrapManifests(ctx context.Context, t Target, o Options) ([]map[string]any, error) {
	_, objs, err := ReadBootstrapManifestSet(ctx, t, o)
	return objs, err
}

// RenderedManifest is one Manifest resource of a control plane: its ID
// ("05-flannel", "99-<inline manifest name>", "99-<extraManifests URL>")
// and its objects.
type RenderedManifest struct {
	ID      string
	Objects []map[string]any
}

// ReadBootstrapManifestSet is ReadBootstrapManifests with the manifests'
// IDs, in order: what tells whether the control plane renders a new
// configuration's manifests yet.
func ReadBootstrapManifestSet(ctx context.Context, t Target, o Options) ([]string, []map[string]any, error) {
	ms, err := ReadRenderedManifests(ctx, t, o)
	var (
		ids []string
		out []map[string]any
	)
	for _, m := range ms {
		ids = append(ids, m.ID)
		out = append(out, m.Objects...)
	}
	return ids, out, err
}

// ReadRenderedManifests reads a control plane's Manifest resources in
// their order (by ID, as Talos applies them).
func ReadRenderedManifests(ctx context.Context, t Target, o Options) ([]RenderedManifest, error) {
	o = o.withDefaults()

	conn, err := ConnectSecure(ctx, t, o)
	if err != nil {
		return nil, err
	}
	defer conn.Close() //nolint:errcheck

	actx, cancel := o.attemptContext(ctx)
	defer cancel()

	list, err := safe.StateList[*k8s.Manifest](conn.nodeContext(actx), conn.client.COSI,
		resource.NewMetadata(k8s.ControlPlaneNamespaceName, k8s.ManifestType, "", resource.VersionUndefined))
	if err != nil {
		return nil, fmt.Errorf("reading the bootstrap manifests of control plane %s: %s", t.Node, statusMessage(err))
	}

	var out []RenderedManifest
	for m := range list.All() {
		r := RenderedManifest{ID: m.Metadata().ID()}
		for _, item := range m.TypedSpec().Items {
			r.Objects = append(r.Objects, maps.Clone(item.Object))
		}
		out = append(out, r)
	}

	return out, nil
}

// ConfiguredProxyImage is the kube-proxy image a control plane's active
// configuration names (cluster.proxy.image, which Talos renders into
// 10-kube-proxy): "" when the node has no cluster configuration. It tells
// a render that lags from one that follows an image a patch pins.
func ConfiguredProxyImage(ctx context.Context, t Target, o Options) (string, error) {
	o = o.withDefaults()

	conn, err := ConnectSecure(ctx, t, o)
	if err != nil {
		return "", err
	}
	defer conn.Close() //nolint:errcheck

	actx, cancel := o.attemptContext(ctx)
	defer cancel()

	nc, err := readActiveConfig(actx, conn) // the persistent one is not needed
	if err != nil {
		return "", fmt.Errorf("control plane %s: %w", t.Node, err)
	}
	cfg, err := loadConfig(nc.Active)
	if err != nil {
		return "", err
	}
	if cfg.Cluster() == nil {
		return "", nil
	}
	return cfg.Cluster().Proxy().Image(), nil
}
