package talosapi

import (
	"testing"
)

// Inventory keys are cli-utils' ObjMetadata strings, so that talosctl and
// this provider read each other's inventory.
func TestInventoryKeysRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ref objRef
		key string
	}{
		{objRef{"kube-system", "kube-proxy", "apps", "DaemonSet"}, "kube-system_kube-proxy_apps_DaemonSet"},
		{objRef{"", "system:coredns", "rbac.authorization.k8s.io", "ClusterRole"}, "_system__coredns_rbac.authorization.k8s.io_ClusterRole"},
		{objRef{"kube-system", "coredns", "", "ConfigMap"}, "kube-system_coredns__ConfigMap"},
	} {
		if got := tc.ref.key(); got != tc.key {
			t.Errorf("key(%+v) = %q, want %q", tc.ref, got, tc.key)
		}
		if got, ok := parseRef(tc.key); !ok || got != tc.ref {
			t.Errorf("parseRef(%q) = %+v, %v; want %+v", tc.key, got, ok, tc.ref)
		}
	}
}

// Definitions first, then ConfigMaps and Secrets, then the rest, each in
// the manifests' order.
func TestManifestStages(t *testing.T) {
	t.Parallel()
	var objs []map[string]any
	for _, k := range []string{"Deployment", "ConfigMap", "Namespace", "DaemonSet", "Secret", "CustomResourceDefinition", "ClusterRole"} {
		objs = append(objs, map[string]any{"kind": k})
	}
	var got []string
	for _, st := range stagesOf(objs) {
		for _, o := range st {
			got = append(got, kindOf(o))
		}
	}
	want := []string{"Namespace", "CustomResourceDefinition", "ClusterRole", "ConfigMap", "Secret", "Deployment", "DaemonSet"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
}

func TestListPath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"workloads.v1alpha2.scheduling.k8s.io": "/apis/scheduling.k8s.io/v1alpha2/workloads",
		"pods.v1.":                             "/api/v1/pods",
		"configmaps.v1":                        "/api/v1/configmaps",
	} {
		if got, err := listPath(in); err != nil || got != want {
			t.Errorf("listPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := listPath("pods"); err == nil {
		t.Error("listPath(pods) accepted a resource without a version")
	}
}
