package pve

import "testing"

// An out-of-band migration moves the config and the VM's disks: the old
// node answers "does not exist", the new one serves the VM.
func TestMigrateVM(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	ctx := ctxT(t)
	node, _ := c.Node(ctx, "pve1")
	task, err := node.NewVirtualMachine(ctx, 104, opt("name", "a"), opt("scsi0", "local-lvm:4"))
	if err != nil {
		t.Fatal(err)
	}
	waitOK(t, ctx, task)
	if err := s.MigrateVM(104, "pve2"); err != nil {
		t.Fatal(err)
	}
	_, err = node.VirtualMachine(ctx, 104)
	mustContain(t, err, "Configuration file 'nodes/pve1/qemu-server/104.conf' does not exist")
	node2, _ := c.Node(ctx, "pve2")
	vm, err := node2.VirtualMachine(ctx, 104)
	if err != nil {
		t.Fatal(err)
	}
	if vm.Name != "a" {
		t.Fatalf("migrated VM: %+v", vm)
	}
	var content []map[string]any
	if err := c.Get(ctx, "/nodes/pve2/storage/local-lvm/content", &content); err != nil {
		t.Fatal(err)
	}
	if len(content) != 1 || content[0]["volid"] != "local-lvm:vm-104-disk-0" {
		t.Fatalf("pve2 local-lvm content: %v", content)
	}
	if err := s.MigrateVM(104, "pve2"); err == nil {
		t.Fatal("a migration to the node the VM is on was accepted")
	}
}
