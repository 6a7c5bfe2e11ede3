package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/kube"
)

// The control planes fetch extraManifests URLs (served here on loopback)
// and Talos creates their objects; objects of the bootstrap manifests
// edited or deleted in the cluster later are drift that `pulumi refresh`
// records and the next `up` applies again, as `talosctl upgrade-k8s`
// would: the preview names each drifted object, the up brings back the
// scaled CoreDNS Deployment and the deleted ConfigMaps (one of an inline
// manifest, one of a fetched URL), and a preview after shows no change.
func TestClusterReappliesDriftedManifests(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/fetched.yaml" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, e2eConfigMap("fetched", "1"))
	}))
	t.Cleanup(srv.Close)

	l := startTCLab(t)
	env := harness.NewEnv(t)
	prog := l.program(1, 1)
	prog.TalosVersion, prog.KubernetesVersion = "v1.14.1", "v1.37.0"
	prog.InlineManifests = inlineManifestsFlow(t, "app", e2eConfigMap("app", "1"))
	prog.ExtraManifests = `["` + srv.URL + `/fetched.yaml"]`
	p := harness.NewYAMLProject(t, env, "drift", prog.render(t))
	p.ConfigureLab(t, l.conn)

	tcTimed(t, "create", func() harness.Result { return p.Up(t) })
	kc := []byte(tcReadOutputs(t, p).Kubeconfig)
	waitConfigMap(t, kc, "app", `"1"`)
	waitConfigMap(t, kc, "fetched", `"1"`)
	tcTimed(t, "refresh without drift", func() harness.Result { return p.Refresh(t) })
	tcTimed(t, "preview without drift", func() harness.Result { return p.Preview(t, "--expect-no-changes") })

	// What a user (or a stray controller) does to the cluster.
	kubeWrite(t, kc, http.MethodPatch, "/apis/apps/v1/namespaces/kube-system/deployments/coredns", `{"spec":{"replicas":5}}`)
	kubeWrite(t, kc, http.MethodDelete, "/api/v1/namespaces/kube-system/configmaps/app", "")
	kubeWrite(t, kc, http.MethodDelete, "/api/v1/namespaces/kube-system/configmaps/fetched", "")

	tcTimed(t, "refresh", func() harness.Result { return p.Refresh(t) })
	pre := tcTimed(t, "preview the drift", func() harness.Result { return p.Preview(t, "--diff") })
	for _, want := range []string{
		"drift: Deployment kube-system/coredns differs from the rendered manifests",
		"drift: ConfigMap kube-system/app is missing from the cluster",
		"drift: ConfigMap kube-system/fetched is missing from the cluster",
		"bootstrapManifests",
	} {
		if !strings.Contains(pre.Output(), want) {
			t.Errorf("the preview does not say %q:\n%s", want, pre.Output())
		}
	}

	for _, l := range strings.Split(pre.Output(), "\n") {
		if strings.Contains(l, "drift: ") {
			t.Logf("preview: %s", strings.TrimSpace(l))
		}
	}

	tcTimed(t, "up the drift", func() harness.Result { return p.Up(t) })
	for _, name := range []string{"app", "fetched"} {
		if level, status, err := configMapLevel(kc, name); err != nil || status != http.StatusOK || level != "1" {
			t.Errorf("ConfigMap kube-system/%s after the up: level %q (HTTP %d, %v), want \"1\"", name, level, status, err)
		}
	}
	if r := deploymentReplicas(t, kc, "coredns"); r != 2 {
		t.Errorf("CoreDNS runs %d replicas after the up, want the manifests' 2", r)
	}
	tcTimed(t, "refresh after", func() harness.Result { return p.Refresh(t) })
	tcTimed(t, "preview after", func() harness.Result { return p.Preview(t, "--expect-no-changes") })
}

// kubeWrite sends a merge patch (PATCH) or a DELETE to the cluster's API.
func kubeWrite(t *testing.T, kubeconfig []byte, method, path, body string) {
	t.Helper()
	client, server, err := kube.Client(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, strings.TrimSuffix(server, "/")+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/merge-patch+json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %s: %s", method, path, resp.Status, b)
	}
}

func deploymentReplicas(t *testing.T, kubeconfig []byte, name string) int {
	t.Helper()
	client, server, err := kube.Client(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(strings.TrimSuffix(server, "/") + "/apis/apps/v1/namespaces/kube-system/deployments/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d struct {
		Spec struct {
			Replicas int `json:"replicas"`
		} `json:"spec"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		t.Fatal(err)
	}
	return d.Spec.Replicas
}

// An extraManifests URL the control planes cannot download (here a 404)
// fails the up that adds it. Talos reports it only in its log; the sync
// reads the control plane's log while it waits and fails once the download
// keeps failing (not after its whole 2-minute wait per control plane),
// naming the URL by its digest (never the URL, which may hold a token),
// Talos's error and `talosctl dmesg`. Once the URL answers,
// Talos's retry renders it and the next up syncs its objects.
func TestClusterReportsUnfetchableManifests(t *testing.T) {
	t.Parallel()
	var serve atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !serve.Load() {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, e2eConfigMap("late", "1"))
	}))
	t.Cleanup(srv.Close)

	l := startTCLab(t)
	env := harness.NewEnv(t)
	prog := l.program(1, 0)
	prog.TalosVersion, prog.KubernetesVersion = "v1.14.1", "v1.37.0"
	p := harness.NewYAMLProject(t, env, "unfetchable", prog.render(t))
	p.ConfigureLab(t, l.conn)
	tcTimed(t, "create", func() harness.Result { return p.Up(t) })
	kc := []byte(tcReadOutputs(t, p).Kubeconfig)

	url := srv.URL + "/late.yaml?token=s3cret"
	prog.ExtraManifests = `["` + url + `"]`
	p.WriteProgram(t, "unfetchable", prog.render(t))
	r := p.Up(t)
	// It fails on the download errors the control plane logs (not after
	// the whole render wait), naming the URL by its digest, Talos's error
	// and where to read it.
	if r.ExitCode == 0 || !strings.Contains(r.Output(), "cannot download the extraManifests URL sha256:") ||
		!strings.Contains(r.Output(), "bad response code: 404") || !strings.Contains(r.Output(), " dmesg`") {
		t.Errorf("up with a URL answering 404: exit %d, want a failure naming the URL's digest, the error and dmesg:\n%s", r.ExitCode, r.Output())
	}
	// The preview's note names a URL given as plain text, as Pulumi shows
	// the input itself; the error never does (it may come from a secret).
	for _, l := range strings.Split(r.Output(), "\n") {
		if strings.Contains(l, "error:") && strings.Contains(l, "s3cret") {
			t.Errorf("the URL's token in an error: %s", l)
		}
	}

	serve.Store(true)
	tcTimed(t, "up once the URL answers", func() harness.Result { return p.Up(t) })
	if level, status, err := configMapLevel(kc, "late"); err != nil || status != http.StatusOK || level != "1" {
		t.Errorf("ConfigMap kube-system/late after the up: level %q (HTTP %d, %v), want \"1\"", level, status, err)
	}
	tcTimed(t, "preview after", func() harness.Result { return p.Preview(t, "--expect-no-changes") })
}
