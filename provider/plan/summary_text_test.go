package plan

import (
	"fmt"
	"testing"
)

// A part names a few nodes, then counts the rest: one readable line for a
// large pool.
func TestSummaryNamesAFew(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		n    int
		want string
	}{
		{1, "1 added: w-1"},
		{4, "4 added: w-1, w-2, w-3, w-4"},
		{5, "5 added: w-1, w-2, w-3, +2 more"},
		{40, "40 added: w-1, w-2, w-3, +37 more"},
	} {
		s := Summary{Total: 50}
		for i := 1; i <= c.n; i++ {
			s.Nodes = append(s.Nodes, NodeChange{Name: fmt.Sprintf("w-%d", i), Role: RoleWorker, Action: ActionAdd})
		}
		if got := s.String(); got != c.want {
			t.Errorf("%d added: %q, want %q", c.n, got, c.want)
		}
	}
	if got := (Summary{Total: 3}).String(); got != NoNodeChanges {
		t.Errorf("no changes: %q", got)
	}
}

func TestDescription(t *testing.T) {
	t.Parallel()
	p := &Plan{Cluster: ClusterConfig{TalosVersion: "v1.12.5", KubernetesVersion: "v1.35.2"}, Nodes: []Node{{Role: RoleControlPlane}}}
	if got, want := p.Description(), "1 node (1 control plane, 0 workers), Talos v1.12.5, Kubernetes v1.35.2"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	p.Nodes = append(p.Nodes, Node{Role: RoleControlPlane}, Node{Role: RoleControlPlane}, Node{Role: RoleWorker})
	if got, want := p.Description(), "4 nodes (3 control planes, 1 worker), Talos v1.12.5, Kubernetes v1.35.2"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
