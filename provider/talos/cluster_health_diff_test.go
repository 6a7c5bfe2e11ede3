package talos

import "testing"

// The other nodes are a hint for the update at hand: a change of the list
// alone (removed nodes gone on the next run, nodes added later in a
// rollout) checks nothing again.
func TestClusterHealthDiffIgnoresOtherNodes(t *testing.T) {
	t.Parallel()
	old := ClusterHealthArgs{ControlPlanes: []string{"10.0.0.10"}, OtherNodes: []string{"10.0.0.11"}}
	in := ClusterHealthArgs{ControlPlanes: []string{"10.0.0.10"}}
	if d := diffClusterHealth(old, in); d.HasChanges {
		t.Errorf("otherNodes alone reported as a change: %+v", d.DetailedDiff)
	}
	in.ControlPlanes = []string{"10.0.0.10", "10.0.0.12"}
	if d := diffClusterHealth(old, in); !d.HasChanges || len(d.DetailedDiff) != 1 {
		t.Errorf("controlPlanes change: %+v", d.DetailedDiff)
	}
}
