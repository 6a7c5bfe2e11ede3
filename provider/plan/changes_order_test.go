package plan

import (
	"slices"
	"testing"
)

// Removed nodes are summarised in plan order whatever order the old state
// lists them in (a state rebuilt from Proxmox is in VMID order, and VMIDs
// follow the order in which parallel creates reached Proxmox).
func TestCompareRemovedInPlanOrder(t *testing.T) {
	t.Parallel()

	old := &State{Nodes: []NodeState{
		{Name: "c-cp-1", Role: RoleControlPlane, Ordinal: 1, VMID: 101},
		{Name: "c-workers-10", Role: RoleWorker, Pool: "workers", Ordinal: 10, VMID: 102},
		{Name: "c-cp-3", Role: RoleControlPlane, Ordinal: 3, VMID: 103},
		{Name: "c-cp-2", Role: RoleControlPlane, Ordinal: 2, VMID: 104},
		{Name: "c-workers-9", Role: RoleWorker, Pool: "workers", Ordinal: 9, VMID: 105},
	}}
	next := &State{Nodes: []NodeState{old.Nodes[0]}}

	s := Compare(old, next)
	if got := s.Names(ActionRemove); !slices.Equal(got, []string{"c-cp-2", "c-cp-3", "c-workers-9", "c-workers-10"}) {
		t.Errorf("removed in order %v", got)
	}
}
