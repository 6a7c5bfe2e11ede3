package pve_test

import (
	"slices"
	"testing"

	labpve "github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// StorageOn answers from the inventory's storage entries where they report
// the storage (no GET /nodes/{node}/storage), and asks the node's list
// where they do not: /cluster/resources shows a storage only to a token
// with Datastore.Audit on it, the node's list also one it may only
// allocate space on (here local-lvm), which must still be found.
func TestStorageOnTakesTheInventoryOnlyWhereItReportsTheStorage(t *testing.T) {
	t.Parallel()
	s, _, _ := startLab(t, labpve.Options{})
	ctx, c := clientWithToken(t, s, `
pveum role add AuditDisk --privs "Datastore.Audit"
pveum role add AllocDisk --privs "Datastore.AllocateSpace"
pveum user add pulumi@pve
pveum user token add pulumi@pve ci --privsep 0
pveum acl modify /storage/local --roles AuditDisk --users pulumi@pve
pveum acl modify /storage/local-lvm --roles AllocDisk --users pulumi@pve
`, "pulumi@pve!ci")
	if _, err := c.Inventory(ctx, 0); err != nil {
		t.Fatal(err)
	}
	const nodeList = "GET /nodes/{node}/storage"
	s.ResetStats()
	local, ok, err := c.StorageOn(ctx, "pve1", "local")
	if err != nil || !ok || !local.Active || !local.Enabled || !slices.Equal(local.Content, []string{"iso", "import", "vztmpl", "snippets"}) {
		t.Fatalf("local on pve1: %+v, %v, %v; want it active with the content types iso, import, vztmpl, snippets", local, ok, err)
	}
	if n := s.Stats().ByKind[nodeList]; n != 0 {
		t.Errorf("a storage the inventory reports was looked up with %d storage lists of the node, want 0", n)
	}
	lvm, ok, err := c.StorageOn(ctx, "pve1", "local-lvm")
	if err != nil || !ok || !slices.Equal(lvm.Content, []string{"images", "rootdir"}) {
		t.Fatalf("local-lvm on pve1 (only Datastore.AllocateSpace): %+v, %v, %v; want it found in the node's list", lvm, ok, err)
	}
	if n := s.Stats().ByKind[nodeList]; n != 1 {
		t.Errorf("a storage the inventory does not report was looked up with %d storage lists of the node, want 1", n)
	}
	if _, ok, err := c.StorageOn(ctx, "pve1", "nosuch"); err != nil || ok {
		t.Errorf("a storage that does not exist: found %v, %v", ok, err)
	}
}
