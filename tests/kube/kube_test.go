package kube

import (
	"strings"
	"testing"
)

// Nodes refuses, before any request, a kubeconfig it cannot read or one with
// several clusters or users (which one to use would be a guess).
func TestNodesRefusesAmbiguousKubeconfig(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct{ name, kubeconfig, want string }{
		{"not YAML", "clusters: [", "not YAML"},
		{"no cluster", "users: [{user: {}}]", "0 clusters and 1 users"},
		{"two clusters", "clusters: [{cluster: {server: https://127.0.0.1:1}}, {cluster: {server: https://127.0.0.1:2}}]\nusers: [{user: {}}]", "2 clusters and 1 users"},
	} {
		if _, err := Nodes([]byte(tc.kubeconfig), ""); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}
