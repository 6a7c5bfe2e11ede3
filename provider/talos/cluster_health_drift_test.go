package talos

import (
	"errors"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// The drift read uses the first control plane whose render is complete; a
// control plane that lacks a URL's manifest (download failing) or still
// renders an inline manifest's old contents is skipped. When none is
// complete, the first render read is used with lag set (so no "dropped"
// lines), without the stale inline manifest's objects.
func TestPickRenderSkipsIncompleteRenders(t *testing.T) {
	t.Parallel()
	url := "https://oauth2:tok@example.com/cni.yaml"
	cm := func(name, level string) []map[string]any {
		return []map[string]any{{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}, "data": map[string]any{"level": level}}}
	}
	lines := []string{"extraManifest " + talosconfig.InputDigest(url), "inlineManifest app sha256:333333333333 objects " + talosconfig.ObjectsDigest(cm("app", "2")),
		driftPrefix + "ConfigMap default/x is missing from the cluster"}
	m := func(id string, o []map[string]any) talosapi.RenderedManifest {
		return talosapi.RenderedManifest{ID: id, Objects: o}
	}
	noURL := []talosapi.RenderedManifest{m("10-proxy", cm("proxy", "1")), m("99-app", cm("app", "1"))}
	full := []talosapi.RenderedManifest{m("10-proxy", cm("proxy", "1")), m("99-app", cm("app", "2")), m("99-"+url, cm("cni", "1"))}
	names := func(objs []map[string]any) string {
		var out []string
		for _, o := range objs {
			out = append(out, o["metadata"].(map[string]any)["name"].(string))
		}
		return strings.Join(out, ",")
	}
	reader := func(renders map[string][]talosapi.RenderedManifest) func(string) ([]talosapi.RenderedManifest, error) {
		return func(cp string) ([]talosapi.RenderedManifest, error) {
			if ms, ok := renders[cp]; ok {
				return ms, nil
			}
			return nil, errors.New("control plane " + cp + " does not answer")
		}
	}

	objs, lag, err := pickRender([]string{"cp1", "cp2", "cp3"}, withoutDrift(lines), reader(map[string][]talosapi.RenderedManifest{"cp2": noURL, "cp3": full}))
	if err != nil || lag != "" || names(objs) != "proxy,app,cni" {
		t.Fatalf("cp1 down, cp2 incomplete, cp3 complete: objects %q, lag %q, err %v", names(objs), lag, err)
	}

	objs, lag, err = pickRender([]string{"cp1", "cp2"}, withoutDrift(lines), reader(map[string][]talosapi.RenderedManifest{"cp1": noURL, "cp2": noURL}))
	if err != nil || !strings.HasPrefix(lag, "control plane cp1: missing extraManifests URL "+talosconfig.InputDigest(url)) || names(objs) != "proxy" {
		t.Fatalf("no complete render: objects %q, lag %q, err %v", names(objs), lag, err)
	}
	if strings.Contains(lag, "oauth2") || strings.Contains(lag, "example.com") {
		t.Fatalf("lag names the URL: %q", lag)
	}

	if _, _, err := pickRender([]string{"cp1"}, lines, reader(nil)); err == nil || !strings.Contains(err.Error(), "cp1 does not answer") {
		t.Fatalf("no control plane answers: %v", err)
	}
	if _, _, err := pickRender(nil, lines, reader(nil)); err == nil {
		t.Fatal("no control planes: no error")
	}
}
