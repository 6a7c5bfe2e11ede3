package talosapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
)

// ManifestDrift says which objects of a cluster's bootstrap manifests the
// cluster no longer holds as the manifests say: "deleted" (the object is
// gone) or "changed" (a server-side apply of the manifest's object, field
// manager "talos", forced, would change it: someone edited, scaled or
// re-imaged it). It is the dry run of the sync `talosctl upgrade-k8s`
// runs (go-kubernetes v0.2.41 kubernetes/ssa: a dry-run apply compared with
// the live object), with `?dryRun=All`, so nothing is written. Forced like
// upgrade-k8s: go-kubernetes' ssa runs fluxcd/pkg/ssa v0.77.0, whose
// dryRunApply and apply both pass client.ForceOwnership (manager_apply.go),
// so the sync takes over fields other managers own and they are drift too
// (a field an autoscaler owns drifts on every refresh: docs/taloscluster.md).
// Fields the manifests do not set (a label someone added) are no drift: the sync
// would leave them. Objects another inventory owns are left out, as the
// sync leaves them alone.
//
// An object the sync's inventory lists that objects no longer contain, and
// that the cluster still holds, is "dropped": the next sync deletes it, as
// upgrade-k8s's does (go-kubernetes kubernetes/ssa prunes what the
// inventory holds and the manifests do not, fluxcd/pkg/ssa
// ResourceManager.DeleteAll over the inventory's stale objects).
func ManifestDrift(ctx context.Context, kubeconfig []byte, server string, objects []map[string]any) ([]ManifestChange, error) {
	return manifestDrift(ctx, kubeconfig, server, objects, true)
}

// ManifestDriftPartial is ManifestDrift for objects from a render that is
// not complete (a URL the control plane has not downloaded yet, a
// re-render after a configuration change still under way): it reports
// "deleted" and "changed" only. What the inventory lists and objects lack
// may only be missing from the render, so no "dropped" is reported.
func ManifestDriftPartial(ctx context.Context, kubeconfig []byte, server string, objects []map[string]any) ([]ManifestChange, error) {
	return manifestDrift(ctx, kubeconfig, server, objects, false)
}

func manifestDrift(ctx context.Context, kubeconfig []byte, server string, objects []map[string]any, complete bool) ([]ManifestChange, error) {
	s, err := newManifestSync(kubeconfig, server)
	if err != nil {
		return nil, err
	}
	defer s.k.close()

	var (
		out  []ManifestChange
		refs []objRef
	)
	for _, stage := range stagesOf(objects) {
		for _, obj := range stage {
			c, ref, err := s.drift(ctx, obj)
			if err != nil {
				return out, err
			}
			refs = append(refs, ref)
			if c != nil {
				out = append(out, *c)
			}
		}
	}

	if !complete {
		return out, nil
	}
	dropped, err := s.dropped(ctx, refs)
	return append(out, dropped...), err
}

// dropped are the objects the inventory lists, refs (the manifests') do
// not, and the cluster holds: those the sync would prune.
func (s *manifestSync) dropped(ctx context.Context, refs []objRef) ([]ManifestChange, error) {
	inv, err := s.readInventory(ctx)
	if err != nil {
		return nil, err
	}
	var out []ManifestChange
	for _, r := range inv {
		if slices.Contains(refs, r) {
			continue
		}
		_, owner, found, err := s.live(ctx, r)
		if err != nil {
			return out, fmt.Errorf("%s (in the inventory %s/%s): %w", r.subject(), inventoryNamespace, inventoryName, err)
		}
		if found && (owner == "" || owner == inventoryName) {
			out = append(out, ManifestChange{Action: "dropped", Subject: r.subject()})
		}
	}
	return out, nil
}

// drift compares one object with the cluster; nil when it is as the
// manifests say. A difference is checked twice: controllers write to the
// objects (a Deployment's revision annotation) between the read and the
// dry run.
// The object's reference (as the inventory lists it) comes back with it.
func (s *manifestSync) drift(ctx context.Context, obj map[string]any) (*ManifestChange, objRef, error) {
	meta := metaOf(obj)
	name, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	path, ref, err := s.path(ctx, apiVersionOf(obj), kindOf(obj), ns, name)
	if errors.Is(err, errNotServed) {
		// A kind the API does not serve (a CRD deleted): its objects are gone.
		group, _, _ := strings.Cut(apiVersionOf(obj), "/")
		if !strings.Contains(apiVersionOf(obj), "/") {
			group = ""
		}
		ref := objRef{Namespace: ns, Name: name, Group: group, Kind: kindOf(obj)}
		return &ManifestChange{Action: "deleted", Subject: ref.subject()}, ref, nil
	}
	if err != nil {
		// Discovery failed (API blip, 403, 503 of an aggregated API): no
		// verdict on the object; the caller keeps what it recorded.
		return nil, ref, fmt.Errorf("%s: %w", objRef{Namespace: ns, Name: name, Kind: kindOf(obj)}.subject(), err)
	}
	c, err := s.driftAt(ctx, obj, path, ref)
	return c, ref, err
}

func (s *manifestSync) driftAt(ctx context.Context, obj map[string]any, path string, ref objRef) (*ManifestChange, error) {
	body, err := json.Marshal(withInventory(obj))
	if err != nil {
		return nil, err
	}

	for attempt := 0; ; attempt++ {
		status, live, err := s.k.do(ctx, http.MethodGet, path)
		if err != nil {
			return nil, err
		}
		if status == http.StatusNotFound {
			return &ManifestChange{Action: "deleted", Subject: ref.subject()}, nil
		}
		if status != http.StatusOK {
			return nil, fmt.Errorf("GET %s: HTTP %d: %s", path, status, short(live))
		}

		status, dry, err := s.k.send(ctx, http.MethodPatch, path+"?fieldManager="+manifestFieldManager+"&force=true&dryRun=All", manifestApplyPatchCTy, body)
		if err != nil {
			return nil, err
		}
		if status != http.StatusOK && status != http.StatusCreated {
			return nil, fmt.Errorf("server-side apply (dry run) of %s: HTTP %d: %s", ref.subject(), status, short(dry))
		}

		var a, b map[string]any
		if err := json.Unmarshal(live, &a); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(dry, &b); err != nil {
			return nil, err
		}
		ann, _ := metaOf(a)["annotations"].(map[string]any)
		if owner, _ := ann[inventoryAnnotation].(string); owner != "" && owner != inventoryName {
			return nil, nil
		}
		if reflect.DeepEqual(contentOf(a), contentOf(b)) {
			return nil, nil
		}
		if attempt == 1 {
			return &ManifestChange{Action: "changed", Subject: ref.subject()}, nil
		}
	}
}

// withInventory is obj with the inventory annotation the sync puts on it.
func withInventory(obj map[string]any) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	meta := map[string]any{}
	for k, v := range metaOf(obj) {
		meta[k] = v
	}
	ann := map[string]any{}
	if a, ok := meta["annotations"].(map[string]any); ok {
		for k, v := range a {
			ann[k] = v
		}
	}
	ann[inventoryAnnotation] = inventoryName
	meta["annotations"] = ann
	out["metadata"] = meta
	return out
}

// contentOf drops what changes without anyone changing the object's
// content: its version, the managers' bookkeeping and its status.
func contentOf(o map[string]any) map[string]any {
	delete(o, "status")
	m := metaOf(o)
	for _, k := range []string{"resourceVersion", "managedFields", "generation"} {
		delete(m, k)
	}
	return o
}
