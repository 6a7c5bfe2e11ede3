package talosapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// CountObjects counts, through a control plane's own Kubernetes API (an
// admin kubeconfig from its Talos API), the objects of each API resource
// given as resource.version.group ("workloads.v1alpha2.scheduling.k8s.io",
// "pods.v1." for the core group): what `talosctl upgrade-k8s` lists before
// an upgrade whose new version no longer serves them (go-kubernetes
// kubernetes/upgrade PopulateRemovedAPIResources). A resource the API does
// not serve counts 0; only resources with objects are in the answer.
func CountObjects(ctx context.Context, cp Target, resources []string, o Options) (map[string]int, error) {
	o = o.withDefaults()
	if len(resources) == 0 {
		return nil, nil
	}

	server, err := KubernetesEndpoint(hostOf(cp.Node))
	if err != nil {
		return nil, err
	}
	kc, err := FetchKubeconfig(ctx, cp, server, o)
	if err != nil {
		return nil, err
	}
	api, err := newKubeAPI(kc.Info, "")
	if err != nil {
		return nil, err
	}
	defer api.close()

	out := map[string]int{}
	for _, r := range resources {
		path, err := listPath(r)
		if err != nil {
			return nil, err
		}
		actx, cancel := o.attemptContext(ctx)
		status, body, err := api.do(actx, http.MethodGet, path)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("listing %s on %s: %w", r, hostOf(cp.Node), err)
		}
		if status == http.StatusNotFound {
			continue // not served (already removed, or never enabled)
		}
		if status != http.StatusOK {
			return nil, fmt.Errorf("listing %s on %s: HTTP %d: %s", r, hostOf(cp.Node), status, short(body))
		}
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			return nil, fmt.Errorf("listing %s: %w", r, err)
		}
		if len(list.Items) > 0 {
			out[r] = len(list.Items)
		}
	}
	return out, nil
}

// listPath is the cluster-wide list path of resource.version.group.
func listPath(r string) (string, error) {
	resource, rest, ok := strings.Cut(r, ".")
	if !ok || resource == "" {
		return "", fmt.Errorf("API resource %q is not resource.version.group", r)
	}
	version, group, _ := strings.Cut(rest, ".")
	if version == "" {
		return "", fmt.Errorf("API resource %q has no version", r)
	}
	if group == "" {
		return "/api/" + version + "/" + resource, nil
	}
	return "/apis/" + group + "/" + version + "/" + resource, nil
}
