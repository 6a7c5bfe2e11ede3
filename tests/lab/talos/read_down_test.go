package talos

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
)

// A Read that reaches a boot whose servers are gone (the node is going down)
// answers Unavailable, as a node that no longer serves. Before, it said
// that /proc/sys/kernel/random/boot_id did not exist, which Talos never
// does, and talosapi took that for a permanent refusal (an upgrade's wait
// failed in TestStagedAndSchematicOnlyUpgrades under load).
func TestReadOfABootGoingDown(t *testing.T) {
	t.Parallel()

	s, _ := newSim(t)
	m := &machined{node: &Node{sim: s}}

	err := m.Read(&machine.ReadRequest{Path: "/proc/sys/kernel/random/boot_id"}, nil)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("Read of the boot ID with the servers gone = %v; want Unavailable", err)
	}
}
