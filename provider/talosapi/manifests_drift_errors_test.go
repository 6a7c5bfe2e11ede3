package talosapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Drift calls an object deleted only when discovery answered that its API
// version (404) or kind is not served; a discovery that failed otherwise
// (503 of an aggregated API, 403) is an error, so the refresh keeps its
// recorded state instead of writing a false "deleted" line.
func TestDriftDeletedOnlyWhenDiscoveryAnswersNotServed(t *testing.T) {
	t.Parallel()

	mux := http.NewServeMux()
	mux.HandleFunc("/apis/metrics.k8s.io/v1beta1", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"message":"the server is currently unable to handle the request"}`, http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/apis/policy.example.com/v1", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"message":"forbidden"}`, http.StatusForbidden)
	})
	mux.HandleFunc("/apis/gone.example.com/v1", http.NotFound) // CRD deleted
	mux.HandleFunc("/apis/apps/v1", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"resources":[{"name":"deployments","kind":"Deployment","namespaced":true}]}`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	obj := func(apiVersion, kind string) map[string]any {
		return map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": "x", "namespace": "kube-system"}}
	}
	s := &manifestSync{k: &kubeAPI{server: srv.URL, http: srv.Client()}, resources: map[string]map[string]apiResource{}}
	ctx := context.Background()

	for _, o := range []map[string]any{obj("metrics.k8s.io/v1beta1", "APIService"), obj("policy.example.com/v1", "Policy")} {
		c, _, err := s.drift(ctx, o)
		if err == nil || c != nil {
			t.Errorf("drift of %s/%s with discovery failing: change %v, err %v; want an error and no change", apiVersionOf(o), kindOf(o), c, err)
		}
	}

	for o, want := range map[*map[string]any]string{
		ptr(obj("gone.example.com/v1", "Widget")): "Widget kube-system/x",
		ptr(obj("apps/v1", "StatefulSet")):        "StatefulSet kube-system/x",
	} {
		c, _, err := s.drift(ctx, *o)
		if err != nil || c == nil || c.Action != "deleted" || c.Subject != want {
			t.Errorf("drift of %s/%s not served: change %+v, err %v; want %q deleted", apiVersionOf(*o), kindOf(*o), c, err, want)
		}
	}
}

func ptr[T any](v T) *T { return &v }
