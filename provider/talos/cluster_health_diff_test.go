package talos

import "testing"

// The leaving list is a hint for the update it belongs to: a change of it
// alone (the removed nodes are gone on the next run) checks nothing again.
func TestClusterHealthDiffIgnoresLeaving(t *testing.T) {
	t.Parallel()
	old := ClusterHealthArgs{ControlPlanes: []string{"10.0.0.10"}, Leaving: []string{"10.0.0.11"}}
	in := ClusterHealthArgs{ControlPlanes: []string{"10.0.0.10"}}
	if d := diffClusterHealth(old, in); d.HasChanges {
		t.Errorf("leaving alone reported as a change: %+v", d.DetailedDiff)
	}
	in.ControlPlanes = []string{"10.0.0.10", "10.0.0.12"}
	if d := diffClusterHealth(old, in); !d.HasChanges || len(d.DetailedDiff) != 1 {
		t.Errorf("controlPlanes change: %+v", d.DetailedDiff)
	}
}
