package pve

import (
	"testing"
)

// A container's VMID is taken for VMs: nextid skips it, a create with it is
// refused with PVE's "CT <id> already exists" and /cluster/resources lists it
// as type lxc.
func TestContainersHoldVMIDs(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	ctx := ctxT(t)
	if err := s.AddContainer("pve2", 100, "dns"); err != nil {
		t.Fatal(err)
	}
	if err := s.AddContainer("pve1", 100, "again"); err == nil {
		t.Fatal("a second guest with VMID 100 was accepted")
	}
	id, err := c.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next, err := id.NextID(ctx)
	if err != nil || next != 101 {
		t.Fatalf("nextid %d %v, want 101", next, err)
	}
	err = c.Get(ctx, "/cluster/nextid?vmid=100", new(any))
	mustContain(t, err, `"vmid":"VM 100 already exists"`)
	node, _ := c.Node(ctx, "pve1")
	_, err = node.NewVirtualMachine(ctx, 100, opt("name", "vm"))
	mustContain(t, err, "500 unable to create VM 100 - CT 100 already exists on node 'pve2'")

	var res []map[string]any
	if err := c.Get(ctx, "/cluster/resources?type=vm", &res); err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0]["type"] != "lxc" || res[0]["id"] != "lxc/100" || res[0]["node"] != "pve2" {
		t.Fatalf("cluster resources: %v", res)
	}
}
