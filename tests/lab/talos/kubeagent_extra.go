package talos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/constants"
	"github.com/siderolabs/talos/pkg/machinery/resources/k8s"
)

// The inventory Talos's ManifestApplyController keeps of the objects it
// created (siderolabs/talos v1.14.1 pkg/machinery/constants:
// KubernetesInventoryNamespace, KubernetesBootstrapManifestsInventoryName;
// the ConfigMap's data keys are cli-utils ObjMetadata strings,
// go-kubernetes v0.2.41 kubernetes/ssa/inventory.go), and the annotation it
// puts on each object (ssa.InventoryAnnotationKey).
const (
	inventoryName       = "talos-bootstrap-manifests-inventory"
	inventoryAnnotation = "config.k8s.io/owning-inventory"
)

// extraManifestObjects are the objects of a control plane's manifests
// beyond the bootstrap workloads: those it fetched by URL
// (manifest_fetch.go) and its inline manifests (what cosi_manifests.go
// publishes), in the order of their IDs, as Talos applies them. sim.mu
// held.
func extraManifestObjects(n *Node) []obj {
	if n == nil {
		return nil
	}

	ms := append(n.renderedURLManifests(), inlineManifests(n.active)...)
	slices.SortStableFunc(ms, func(a, b *k8s.Manifest) int { return strings.Compare(a.Metadata().ID(), b.Metadata().ID()) })

	var out []obj

	for _, m := range ms {
		for _, item := range m.TypedSpec().Items {
			out = append(out, deepCopy(item.Object))
		}
	}

	return out
}

// applyExtraManifests does for the inline manifests what Talos's
// ManifestApplyController does for every manifest whenever they change
// (internal/app/machined/pkg/controllers/k8s/manifest_apply.go apply): an
// object the inventory lists, or that exists, is left alone (existing ones
// are added to the inventory); a missing one is server-side applied with
// the field manager "talos" and the inventory annotation; the inventory is
// written after. Changed and removed manifests are not applied: that is
// `talosctl upgrade-k8s`'s sync. It reports whether every object was
// handled. The bootstrap workloads (applyBootstrapManifests) are listed
// in the inventory too, as Talos lists every object it applied.
func applyExtraManifests(ctx context.Context, c *kubeClient, boot []bootstrapObject, extra []obj) bool {
	inv, err := readInventory(ctx, c)
	if err != nil {
		return false
	}

	for _, o := range boot {
		inv[refKey(o.body, fieldString(o.body, "metadata", "namespace"))] = ""
	}

	done := true
	disc := map[string]map[string]kubeResource{}

	for _, o := range extra {
		path, ns, err := objectPath(ctx, c, disc, o)
		if err != nil {
			done = false

			continue
		}

		key := refKey(o, ns)
		if _, listed := inv[key]; listed {
			continue
		}

		if err := c.do(ctx, http.MethodGet, path, "", nil, nil); err == nil {
			inv[key] = ""

			continue
		} else if !isKubeStatus(err, http.StatusNotFound) {
			done = false

			continue
		}

		o = deepCopy(o)
		meta := fieldMap(o, "metadata")
		ann, _ := meta["annotations"].(map[string]any)
		if ann == nil {
			ann = map[string]any{}
		}

		ann[inventoryAnnotation] = inventoryName
		meta["annotations"] = ann

		if err := c.do(ctx, http.MethodPatch, path+"?fieldManager="+url.QueryEscape(constants.KubernetesFieldManagerName),
			"application/apply-patch+yaml", o, nil); err != nil {
			done = false

			continue
		}

		inv[key] = ""
	}

	cm := obj{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": obj{"name": inventoryName, "namespace": "kube-system"},
		"data":     inv,
	}
	if err := c.do(ctx, http.MethodPatch, "/api/v1/namespaces/kube-system/configmaps/"+inventoryName+"?fieldManager="+
		url.QueryEscape(constants.KubernetesFieldManagerName)+"&force=true", "application/apply-patch+yaml", cm, nil); err != nil {
		return false
	}

	return done
}

func readInventory(ctx context.Context, c *kubeClient) (map[string]string, error) {
	var cm struct {
		Data map[string]string `json:"data"`
	}

	err := c.do(ctx, http.MethodGet, "/api/v1/namespaces/kube-system/configmaps/"+inventoryName, "", nil, &cm)
	if err != nil && !isKubeStatus(err, http.StatusNotFound) {
		return nil, err
	}

	if cm.Data == nil {
		cm.Data = map[string]string{}
	}

	return cm.Data, nil
}

// refKey is cli-utils' ObjMetadata string: namespace_name_group_kind, a
// colon in the name as "__" (fluxcd/cli-utils pkg/object/objmetadata.go);
// ns is where the object lives ("" for a cluster-scoped one).
func refKey(o obj, ns string) string {
	group, _, found := strings.Cut(fieldString(o, "apiVersion"), "/")
	if !found {
		group = ""
	}

	return strings.Join([]string{ns,
		strings.ReplaceAll(fieldString(o, "metadata", "name"), ":", "__"), group, fieldString(o, "kind")}, "_")
}

type kubeResource struct {
	name       string
	namespaced bool
}

// objectPath is an object's REST path, found through discovery as kubectl
// finds it, and its namespace: a namespaced object without one goes to
// "default".
func objectPath(ctx context.Context, c *kubeClient, disc map[string]map[string]kubeResource, o obj) (string, string, error) {
	gv := fieldString(o, "apiVersion")
	base := "/apis/" + gv

	if gv == "v1" {
		base = "/api/v1"
	}

	kinds, ok := disc[gv]
	if !ok {
		var list struct {
			Resources []struct {
				Name       string `json:"name"`
				Kind       string `json:"kind"`
				Namespaced bool   `json:"namespaced"`
			} `json:"resources"`
		}

		if err := c.do(ctx, http.MethodGet, base, "", nil, &list); err != nil {
			return "", "", err
		}

		kinds = map[string]kubeResource{}

		for _, r := range list.Resources {
			if !strings.Contains(r.Name, "/") {
				kinds[r.Kind] = kubeResource{name: r.Name, namespaced: r.Namespaced}
			}
		}

		disc[gv] = kinds
	}

	r, ok := kinds[fieldString(o, "kind")]
	if !ok {
		return "", "", fmt.Errorf("no kind %s in %s", fieldString(o, "kind"), gv)
	}

	name := url.PathEscape(fieldString(o, "metadata", "name"))
	if !r.namespaced {
		return base + "/" + r.name + "/" + name, "", nil
	}

	ns := fieldString(o, "metadata", "namespace")
	if ns == "" {
		ns = "default"
	}

	return base + "/namespaces/" + url.PathEscape(ns) + "/" + r.name + "/" + name, ns, nil
}

// extraKey identifies what applyExtraManifests last handled completely.
func extraKey(extra []obj) string {
	b, _ := json.Marshal(extra) //nolint:errchkjson // objects from YAML always marshal

	return string(b)
}

// manifestSource is the cluster's control plane whose manifests are
// applied: a running one that serves its Talos API, the lowest address
// first (Talos takes an etcd lock; one applies at a time); nil without
// one. sim.mu held.
func (s *Sim) manifestSource(c *cluster) *Node {
	var best *Node

	for m := range s.nodes {
		if m.phase == PhaseRunning && m.active != nil && isControlPlane(m.active) && !m.apiReadyAt.IsZero() &&
			m.active.Cluster().ID() == c.id && (best == nil || m.addr.Less(best.addr)) {
			best = m
		}
	}

	return best
}
