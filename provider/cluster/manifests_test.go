package cluster

import (
	"slices"
	"strings"
	"testing"

	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
)

func withInline(in map[string]any, contents ...string) map[string]any {
	var ms []any
	for i, c := range contents {
		ms = append(ms, map[string]any{"name": []string{"app", "extra"}[i], "contents": c})
	}
	in["inlineManifests"] = ms
	return in
}

const appV1 = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: kube-system}\ndata: {level: \"1\"}\n"
const appV2 = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: kube-system}\ndata: {level: \"2\"}\n"

// The final health check gets what the bootstrap manifests are rendered
// from: the same inputs give the same lines (no change to preview), an
// edited inline manifest changes its line only (which makes the check sync
// the manifests), and the Proxmox CCM token secret, which one inline
// manifest holds, is in no line and makes them neither secret nor unstable.
func TestHealthCheckCarriesManifestInputs(t *testing.T) {
	t.Parallel()
	lines := func(in map[string]any) []string {
		rec, _, err := construct(t, &fakeInventory{hosts: threeHosts()}, in)
		must(t, err)
		v := rec.get(t, "ClusterHealth", "lab-healthy").inputs.Get("bootstrapManifests")
		if v.Secret() {
			t.Errorf("bootstrapManifests is secret")
		}
		return strs(v)
	}
	v1 := lines(withInline(baseInputs(), appV1))
	i := slices.IndexFunc(v1, func(l string) bool { return strings.HasPrefix(l, "inlineManifest app sha256:") })
	if i < 0 {
		t.Fatalf("lines %q", v1)
	}
	if again := lines(withInline(baseInputs(), appV1)); !slices.Equal(v1, again) {
		t.Errorf("the same inputs give other lines:\n%q\n%q", v1, again)
	}
	v2 := lines(withInline(baseInputs(), appV2))
	if len(v2) != len(v1) || v2[i] == v1[i] || !slices.Equal(v1[:i], v2[:i]) || !slices.Equal(v1[i+1:], v2[i+1:]) {
		t.Errorf("an edited inline manifest:\n%q\n%q", v1, v2)
	}

	ccm := func(secret string) map[string]any {
		in := baseInputs()
		in["cloudControllerManager"] = map[string]any{"proxmox": map[string]any{
			"url": "https://pve.example.com:8006/api2/json", "tokenId": "kubernetes@pve!ccm",
			"tokenSecret": presource.MakeSecret(presource.NewProperty(secret)),
		}}
		return in
	}
	a, b := lines(ccm("s3cr3t-token-value")), lines(ccm("rotated-token-value"))
	if strings.Contains(strings.Join(a, "\n"), "s3cr3t") {
		t.Errorf("the token secret in the lines: %q", a)
	}
	if slices.Equal(a, b) {
		t.Errorf("a rotated CCM token secret does not change the lines (its Secret would never be synced): %q", a)
	}
}

// The preview of the sync compares what a control plane runs with its new
// configuration and names the objects.
func TestManifestSyncNote(t *testing.T) {
	t.Parallel()
	cfgOf := func(in map[string]any) (string, *plan.Plan) {
		rec, _, err := construct(t, &fakeInventory{hosts: threeHosts()}, in)
		must(t, err)
		for _, a := range rec.byType("ConfigurationApply") {
			if a.inputs.Get("node").AsString() == "10.0.0.11" {
				return a.inputs.Get("machineConfiguration").AsString(), nil
			}
		}
		t.Fatal("no configuration for 10.0.0.11")
		return "", nil
	}
	running, _ := cfgOf(withInline(baseInputs(), appV1, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: old}\n"))
	next, _ := cfgOf(withInline(baseInputs(), appV2))
	p := &plan.Plan{Cluster: plan.ClusterConfig{Name: "lab"}, Nodes: []plan.Node{{Name: "lab-cp-1", Role: plan.RoleControlPlane, Existing: true}}}
	readings := map[string]nodeReading{"lab-cp-1": {running: runningNode{Config: running}}}

	note, err := manifestSyncNote(p, readings, map[string]string{"lab-cp-1": next})
	must(t, err)
	for _, want := range []string{"cluster lab: after the update, the bootstrap manifests are synced as talosctl upgrade-k8s does",
		"changes 1 (ConfigMap kube-system/app)", "prunes 1 (ConfigMap default/old)"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q lacks %q", note, want)
		}
	}
	if note, err := manifestSyncNote(p, readings, map[string]string{"lab-cp-1": running}); err != nil || note != "" {
		t.Errorf("unchanged: %q, %v", note, err)
	}
	p.Nodes[0].Existing = false
	if note, _ := manifestSyncNote(p, readings, map[string]string{"lab-cp-1": next}); note != "" {
		t.Errorf("a new control plane: %q", note)
	}
}
