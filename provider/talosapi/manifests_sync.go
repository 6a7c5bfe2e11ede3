package talosapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// The names `talosctl upgrade-k8s` uses for its server-side apply of the
// bootstrap manifests (siderolabs/talos v1.14.1
// pkg/machinery/constants: KubernetesFieldManagerName,
// KubernetesInventoryNamespace, KubernetesBootstrapManifestsInventoryName;
// go-kubernetes v0.2.41 kubernetes/ssa: InventoryAnnotationKey), so that a
// cluster synced by this provider and by talosctl share one inventory.
const (
	manifestFieldManager  = "talos"
	inventoryNamespace    = "kube-system"
	inventoryName         = "talos-bootstrap-manifests-inventory"
	inventoryAnnotation   = "config.k8s.io/owning-inventory"
	manifestApplyPatchCTy = "application/apply-patch+yaml"
)

// ManifestChange is what the sync did to one object: "created",
// "configured", "unchanged" or "deleted" (the object is no longer in the
// manifests and was in the inventory).
type ManifestChange struct {
	Action  string
	Subject string // Kind namespace/name, or Kind name for cluster objects
}

func (c ManifestChange) String() string { return c.Subject + " " + c.Action }

// SyncManifests brings the objects of a cluster's bootstrap manifests to
// what objects say, as `talosctl upgrade-k8s` does after a Kubernetes
// upgrade (pkg/cluster/kubernetes/talos_managed.go syncManifestsSSA):
// server-side apply with the field manager "talos", forced, in stages
// (CustomResourceDefinitions, Namespaces and ClusterRoles first, then
// ConfigMaps and Secrets, then the rest, as go-kubernetes' ssa applies
// them), each object annotated with the inventory that owns it; objects
// the inventory lists that objects no longer contain are deleted. Its
// inventory policy is talosctl's default, AdoptIfNoInventory: an existing
// object without an owning inventory is taken over, one owned by another
// inventory is refused.
func SyncManifests(ctx context.Context, kubeconfig []byte, objects []map[string]any) ([]ManifestChange, error) {
	return SyncManifestsVia(ctx, kubeconfig, "", objects)
}

// SyncManifestsVia is SyncManifests through server instead of the
// kubeconfig's server (a control plane's https://10.5.0.2:6443 before the
// VIP answers); "" keeps the kubeconfig's.
func SyncManifestsVia(ctx context.Context, kubeconfig []byte, server string, objects []map[string]any) ([]ManifestChange, error) {
	s, err := newManifestSync(kubeconfig, server)
	if err != nil {
		return nil, err
	}
	defer s.k.close()

	inv, err := s.readInventory(ctx)
	if err != nil {
		return nil, err
	}

	var (
		changes []ManifestChange
		applied []objRef
	)

	for _, stage := range stagesOf(objects) {
		s.resources = map[string]map[string]apiResource{} // CRDs of the stage before are served now
		for _, obj := range stage {
			c, ref, err := s.apply(ctx, obj)
			if err != nil {
				return changes, err
			}
			changes = append(changes, c)
			applied = append(applied, ref)
		}
	}

	all := slices.Clone(applied)
	for _, r := range inv {
		if !slices.Contains(all, r) {
			all = append(all, r)
		}
	}
	if err := s.writeInventory(ctx, all); err != nil {
		return changes, err
	}

	var keep []objRef
	for _, r := range all {
		if slices.Contains(applied, r) {
			keep = append(keep, r)
			continue
		}
		c, err := s.prune(ctx, r)
		if err != nil {
			return changes, err
		}
		if c != nil {
			changes = append(changes, *c)
		}
	}

	return changes, s.writeInventory(ctx, keep)
}

// objRef names an object as cli-utils' ObjMetadata does.
type objRef struct{ Namespace, Name, Group, Kind string }

// key is ObjMetadata.String(): namespace_name_group_kind, a colon in the
// name written as "__" (fluxcd/cli-utils pkg/object/objmetadata.go).
func (r objRef) key() string {
	return strings.Join([]string{r.Namespace, strings.ReplaceAll(r.Name, ":", "__"), r.Group, r.Kind}, "_")
}

func parseRef(key string) (objRef, bool) {
	parts := strings.Split(key, "_")
	if len(parts) < 4 {
		return objRef{}, false
	}
	n := len(parts)
	// A name may hold "__" (a colon), so the name is what lies between the
	// namespace and the last two fields.
	name := strings.ReplaceAll(strings.Join(parts[1:n-2], "_"), "__", ":")
	return objRef{Namespace: parts[0], Name: name, Group: parts[n-2], Kind: parts[n-1]}, true
}

func (r objRef) subject() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

type apiResource struct {
	name       string
	namespaced bool
}

type manifestSync struct {
	k         *kubeAPI
	resources map[string]map[string]apiResource // apiVersion -> kind -> resource
}

// stagesOf orders objects in go-kubernetes' ssa stages, keeping the
// manifests' order within a stage.
func stagesOf(objects []map[string]any) [][]map[string]any {
	stages := make([][]map[string]any, 3)
	for _, o := range objects {
		switch kindOf(o) {
		case "CustomResourceDefinition", "Namespace", "ClusterRole":
			stages[0] = append(stages[0], o)
		case "ConfigMap", "Secret":
			stages[1] = append(stages[1], o)
		default:
			stages[2] = append(stages[2], o)
		}
	}
	return stages
}

func kindOf(o map[string]any) string { s, _ := o["kind"].(string); return s }

func apiVersionOf(o map[string]any) string { s, _ := o["apiVersion"].(string); return s }

func metaOf(o map[string]any) map[string]any {
	m, _ := o["metadata"].(map[string]any)
	if m == nil {
		m = map[string]any{}
		o["metadata"] = m
	}
	return m
}

// errNotServed: discovery answered, and the API version (404) or the kind
// (absent from its list) is not there, e.g. its CRD was deleted. Only this
// makes an object "deleted" in drift: any other discovery error (timeout,
// 401/403, 503 of an aggregated API) says nothing about the object.
var errNotServed = errors.New("the Kubernetes API does not serve")

// resource finds the REST resource of a kind through discovery.
func (s *manifestSync) resource(ctx context.Context, apiVersion, kind string) (apiResource, error) {
	kinds, ok := s.resources[apiVersion]
	if !ok {
		path := "/apis/" + apiVersion
		if apiVersion == "v1" {
			path = "/api/v1"
		}
		status, body, err := s.k.do(ctx, http.MethodGet, path)
		if err != nil {
			return apiResource{}, fmt.Errorf("discovery of %s: %w", apiVersion, err)
		}
		if status == http.StatusNotFound {
			return apiResource{}, fmt.Errorf("%w: %s", errNotServed, apiVersion)
		}
		if status != http.StatusOK {
			return apiResource{}, fmt.Errorf("discovery of %s: GET %s: HTTP %d: %s", apiVersion, path, status, short(body))
		}
		var list struct {
			Resources []struct {
				Name       string `json:"name"`
				Kind       string `json:"kind"`
				Namespaced bool   `json:"namespaced"`
			} `json:"resources"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			return apiResource{}, fmt.Errorf("discovery of %s: %w", apiVersion, err)
		}
		kinds = map[string]apiResource{}
		for _, r := range list.Resources {
			if !strings.Contains(r.Name, "/") { // not a subresource
				kinds[r.Kind] = apiResource{name: r.Name, namespaced: r.Namespaced}
			}
		}
		s.resources[apiVersion] = kinds
	}
	r, ok := kinds[kind]
	if !ok {
		return apiResource{}, fmt.Errorf("%w: kind %s in %s", errNotServed, kind, apiVersion)
	}
	return r, nil
}

// path is the object's REST path, and its reference.
func (s *manifestSync) path(ctx context.Context, apiVersion, kind, namespace, name string) (string, objRef, error) {
	r, err := s.resource(ctx, apiVersion, kind)
	if err != nil {
		return "", objRef{}, err
	}
	group, _, found := strings.Cut(apiVersion, "/")
	if !found {
		group = ""
	}
	p := "/apis/" + apiVersion
	if apiVersion == "v1" {
		p = "/api/v1"
	}
	if r.namespaced {
		if namespace == "" {
			namespace = "default" // as kubectl apply places it
		}
		p += "/namespaces/" + url.PathEscape(namespace)
	} else {
		namespace = ""
	}
	p += "/" + r.name + "/" + url.PathEscape(name)
	return p, objRef{Namespace: namespace, Name: name, Group: group, Kind: kind}, nil
}

// current reads an object's resourceVersion and owning inventory; found
// is false on 404.
func (s *manifestSync) current(ctx context.Context, path string) (version, owner string, found bool, err error) {
	status, body, err := s.k.do(ctx, http.MethodGet, path)
	if err != nil {
		return "", "", false, err
	}
	if status == http.StatusNotFound {
		return "", "", false, nil
	}
	if status != http.StatusOK {
		return "", "", false, fmt.Errorf("GET %s: HTTP %d: %s", path, status, short(body))
	}
	var o struct {
		Metadata struct {
			ResourceVersion string            `json:"resourceVersion"`
			Annotations     map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &o); err != nil {
		return "", "", false, err
	}
	return o.Metadata.ResourceVersion, o.Metadata.Annotations[inventoryAnnotation], true, nil
}

func (s *manifestSync) apply(ctx context.Context, obj map[string]any) (ManifestChange, objRef, error) {
	meta := metaOf(obj)
	name, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	path, ref, err := s.path(ctx, apiVersionOf(obj), kindOf(obj), ns, name)
	if err != nil {
		return ManifestChange{}, ref, fmt.Errorf("%s %s: %w", kindOf(obj), name, err)
	}

	before, owner, found, err := s.current(ctx, path)
	if err != nil {
		return ManifestChange{}, ref, err
	}
	if found && owner != "" && owner != inventoryName {
		return ManifestChange{}, ref, fmt.Errorf("%s belongs to the inventory %q, not %s: the sync leaves it alone; remove its %s annotation to let the bootstrap manifests take it over",
			ref.subject(), owner, inventoryName, inventoryAnnotation)
	}

	ann, _ := meta["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
	}
	ann[inventoryAnnotation] = inventoryName
	meta["annotations"] = ann

	body, err := json.Marshal(obj) // JSON is YAML: the apply patch may be either
	if err != nil {
		return ManifestChange{}, ref, err
	}
	status, answer, err := s.k.send(ctx, http.MethodPatch, path+"?fieldManager="+manifestFieldManager+"&force=true", manifestApplyPatchCTy, body)
	if err != nil {
		return ManifestChange{}, ref, err
	}
	if status != http.StatusOK && status != http.StatusCreated {
		return ManifestChange{}, ref, fmt.Errorf("server-side apply of %s: HTTP %d: %s", ref.subject(), status, short(answer))
	}
	var after struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(answer, &after)

	action := "configured"
	switch {
	case !found:
		action = "created"
	case after.Metadata.ResourceVersion == before:
		action = "unchanged"
	}
	return ManifestChange{Action: action, Subject: ref.subject()}, ref, nil
}

func (s *manifestSync) inventoryPath() string {
	return "/api/v1/namespaces/" + inventoryNamespace + "/configmaps/" + inventoryName
}

func (s *manifestSync) readInventory(ctx context.Context) ([]objRef, error) {
	status, body, err := s.k.do(ctx, http.MethodGet, s.inventoryPath())
	if err != nil {
		return nil, err
	}
	if status == http.StatusNotFound {
		return nil, nil
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("reading the manifests inventory %s/%s: HTTP %d: %s", inventoryNamespace, inventoryName, status, short(body))
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := json.Unmarshal(body, &cm); err != nil {
		return nil, err
	}
	var out []objRef
	for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
		if r, ok := parseRef(k); ok {
			out = append(out, r)
		}
	}
	return out, nil
}

func (s *manifestSync) writeInventory(ctx context.Context, refs []objRef) error {
	data := map[string]string{}
	for _, r := range refs {
		data[r.key()] = ""
	}
	cm := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": inventoryName, "namespace": inventoryNamespace},
		"data":     data,
	}
	body, err := json.Marshal(cm)
	if err != nil {
		return err
	}
	status, answer, err := s.k.send(ctx, http.MethodPatch, s.inventoryPath()+"?fieldManager="+manifestFieldManager+"&force=true", manifestApplyPatchCTy, body)
	if err != nil {
		return err
	}
	if status != http.StatusOK && status != http.StatusCreated {
		return fmt.Errorf("writing the manifests inventory %s/%s: HTTP %d: %s", inventoryNamespace, inventoryName, status, short(answer))
	}
	return nil
}

// live finds an object the inventory lists in the cluster: its REST path,
// its owning inventory, and whether it is there. An object of a group or
// kind the API no longer serves (its CRD deleted) is not there.
func (s *manifestSync) live(ctx context.Context, r objRef) (path, owner string, found bool, err error) {
	apiVersion := "v1"
	if r.Group != "" {
		v, err := s.preferredVersion(ctx, r.Group)
		if errors.Is(err, errNotServed) {
			return "", "", false, nil
		}
		if err != nil {
			return "", "", false, err
		}
		apiVersion = r.Group + "/" + v
	}
	path, _, err = s.path(ctx, apiVersion, r.Kind, r.Namespace, r.Name)
	if errors.Is(err, errNotServed) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, err
	}
	_, owner, found, err = s.current(ctx, path)
	return path, owner, found, err
}

// prune deletes an object the manifests no longer contain, unless another
// inventory owns it; nil when it is gone already.
func (s *manifestSync) prune(ctx context.Context, r objRef) (*ManifestChange, error) {
	path, owner, found, err := s.live(ctx, r)
	if err != nil || !found {
		return nil, err
	}
	if owner != "" && owner != inventoryName {
		return nil, fmt.Errorf("%s is no longer in the bootstrap manifests but belongs to the inventory %q: left in place; delete it by hand if it is not needed", r.subject(), owner)
	}
	status, body, err := s.k.send(ctx, http.MethodDelete, path, "application/json", []byte(`{"propagationPolicy":"Background"}`))
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK && status != http.StatusAccepted && status != http.StatusNotFound {
		return nil, fmt.Errorf("deleting %s: HTTP %d: %s", r.subject(), status, short(body))
	}
	return &ManifestChange{Action: "deleted", Subject: r.subject()}, nil
}

// preferredVersion is the version the API prefers for a group.
func (s *manifestSync) preferredVersion(ctx context.Context, group string) (string, error) {
	status, body, err := s.k.do(ctx, http.MethodGet, "/apis/"+group)
	if err != nil {
		return "", err
	}
	if status == http.StatusNotFound {
		return "", fmt.Errorf("%w: API group %s", errNotServed, group)
	}
	if status != http.StatusOK {
		return "", fmt.Errorf("discovery of API group %s: HTTP %d: %s", group, status, short(body))
	}
	var g struct {
		PreferredVersion struct {
			Version string `json:"version"`
		} `json:"preferredVersion"`
	}
	if err := json.Unmarshal(body, &g); err != nil || g.PreferredVersion.Version == "" {
		return "", errors.Join(errors.New("no preferred version for API group "+group), err)
	}
	return g.PreferredVersion.Version, nil
}

// newManifestSync connects to the cluster of kubeconfig, through server
// instead of the kubeconfig's server unless it is "" (the caller closes
// s.k).
func newManifestSync(kubeconfig []byte, server string) (*manifestSync, error) {
	info, err := ParseKubeconfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	if server != "" {
		if server, err = KubernetesEndpoint(server); err != nil {
			return nil, err
		}
	}
	k, err := newKubeAPI(info, server)
	if err != nil {
		return nil, err
	}
	return &manifestSync{k: k, resources: map[string]map[string]apiResource{}}, nil
}
