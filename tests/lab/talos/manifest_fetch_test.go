package talos

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cosi-project/runtime/pkg/resource"
	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/siderolabs/talos/pkg/machinery/resources/k8s"
)

func withExtraManifests(header string, urls ...string) func(string) string {
	var b strings.Builder

	b.WriteString("    clusterName: lab\n    extraManifests:\n")

	for _, u := range urls {
		b.WriteString("        - " + u + "\n")
	}

	b.WriteString("    extraManifestHeaders:\n        X-Token: " + header + "\n")

	return replaceOnce("    clusterName: lab\n", b.String())
}

// A control plane fetches its extraManifests URLs (with
// extraManifestHeaders) and renders each as a Manifest "99-<url>", parsed
// as Talos parses manifests; Talos's apply then creates the objects. A
// download that fails renders nothing, is logged as ExtraManifestController
// logs it ("error downloading"), and is retried until it succeeds.
func TestURLManifestsFetchedLikeTalos(t *testing.T) {
	t.Parallel()

	var serveLate atomic.Bool

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Token") != "t1" {
			http.Error(w, "no token", http.StatusForbidden)

			return
		}

		switch {
		case r.URL.Path == "/app.yaml":
			// YAML 1.1 as Talos reads it: `yes` is true; a List unwrapped.
			w.Write([]byte("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: fetched, namespace: kube-system}\n  data: {level: \"1\"}\n")) //nolint:errcheck
		case r.URL.Path == "/late.yaml" && serveLate.Load():
			w.Write([]byte(configMapYAML("late", "1"))) //nolint:errcheck
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)

	app, late := srv.URL+"/app.yaml", srv.URL+"/late.yaml"
	tc := bootCluster(t, clusterOpts{cps: 1, patch: withExtraManifests("t1", app, late)})
	tc.bootstrap(t)

	ctx := ctxT(t)
	c := tc.client(t, tc.cps[0])

	rendered := func() map[string]*k8s.Manifest {
		list, err := safe.StateList[*k8s.Manifest](ctx, c.COSI, resource.NewMetadata(k8s.ControlPlaneNamespaceName, k8s.ManifestType, "", resource.VersionUndefined))
		if err != nil {
			t.Fatal(err)
		}

		out := map[string]*k8s.Manifest{}
		for m := range list.All() {
			out[m.Metadata().ID()] = m
		}

		return out
	}

	waitFor(t, "manifest 99-"+app, func() bool { return rendered()["99-"+app] != nil })

	if m := rendered()["99-"+app]; len(m.TypedSpec().Items) != 1 || m.TypedSpec().Items[0].Object["kind"] != "ConfigMap" {
		t.Errorf("99-%s items %+v, want the List's one ConfigMap", app, m.TypedSpec().Items)
	}

	waitFor(t, "the failed download logged", func() bool {
		return strings.Contains(tc.logs.String(), `error downloading \"`+late+`\": bad response code: 404`)
	})

	if m := rendered()["99-"+late]; m != nil {
		t.Errorf("a URL answering 404 rendered %+v", m.TypedSpec().Items)
	}

	k := newKubectl(t, tc.kubeconfig(t))
	mustMatch(t, "fetched", k.eventually(`level: "1"`, "get", "configmap", "-n", "kube-system", "fetched", "-o", "yaml"),
		`config.k8s.io/owning-inventory: talos-bootstrap-manifests-inventory`)

	// The controller retries: once the URL answers, it is rendered and applied.
	serveLate.Store(true)
	waitFor(t, "manifest 99-"+late+" after a retry", func() bool { return rendered()["99-"+late] != nil })
	k.eventually(`level: "1"`, "get", "configmap", "-n", "kube-system", "late", "-o", "yaml")
}
