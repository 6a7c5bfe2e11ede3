package cluster

import (
	"slices"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
)

// Every VM carries the owning stack's tag, and a cluster name whose VMs
// carry another stack's tag is refused before anything is registered.
func TestClusterNameOfAnotherStackIsRefused(t *testing.T) {
	inv, first := existingCluster(t, baseInputs())
	var stackTags []string
	for _, vm := range inv.vms {
		for _, tag := range vm.Tags {
			if strings.HasPrefix(tag, plan.TagStackPrefix) && !slices.Contains(stackTags, tag) {
				stackTags = append(stackTags, tag)
			}
		}
	}
	if len(stackTags) != 1 || len(first.byType("VirtualMachine")) == 0 {
		t.Fatalf("stack tags on the VMs: %v", stackTags)
	}

	// The same stack constructs again without a complaint.
	if _, _, err := construct(t, inv, baseInputs()); err != nil {
		t.Fatalf("own VMs: %v", err)
	}

	// Another stack's VMs under the same cluster name.
	other := plan.StackTag("someone-else", "dev")
	for i := range inv.vms {
		inv.vms[i].Tags = slices.DeleteFunc(inv.vms[i].Tags, func(s string) bool { return s == stackTags[0] })
		inv.vms[i].Tags = append(inv.vms[i].Tags, other)
	}
	rec, _, err := construct(t, inv, baseInputs())
	if err == nil || !strings.Contains(err.Error(), `clusterName: cluster "lab" already exists on this Proxmox cluster in another Pulumi stack`) ||
		!strings.Contains(err.Error(), other) || !strings.Contains(err.Error(), stackTags[0]) {
		t.Fatalf("another stack's cluster: %v", err)
	}
	if keys := rec.keys(); len(keys) != 0 {
		t.Errorf("registered %v", keys)
	}
}
