package pve

import (
	"context"
	"strings"
	"testing"

	proxmox "github.com/luthermonson/go-proxmox"
)

func pendingMap(t *testing.T, vm *proxmox.VirtualMachine) map[string]proxmox.PendingConfigItem {
	t.Helper()
	p, err := vm.Pending(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]proxmox.PendingConfigItem{}
	for _, it := range *p {
		out[it.Key] = it
	}
	return out
}

// TestPendingOnRunningVM: what PVE cannot hot-plug waits for a restart.
func TestPendingOnRunningVM(t *testing.T) {
	t.Parallel()
	// A guest that boots whatever it gets (and so reacts to ACPI shutdown,
	// which a reboot needs).
	anyGuest := func(ctx context.Context, vm BootInfo, _ Host) Guest { return &recordingGuest{info: vm} }
	s, c := startLab(t, Options{Booter: anyGuest})
	ctx := ctxT(t)
	vm := createStarted(t, ctx, c, 100, opt("cores", 1), opt("memory", "1024"), opt("name", "a"), opt("net0", "virtio,bridge=vmbr0"), opt("scsi0", "local-lvm:4"))

	task, err := vm.Config(ctx, opt("cores", 4), opt("memory", "2048"), opt("name", "b"), opt("description", "hello"), opt("net0", "virtio,bridge=vmbr0,tag=30"), opt("scsi1", "local-lvm:2"))
	if err != nil {
		t.Fatal(err)
	}
	waitOK(t, ctx, task)
	cur, pend, _ := s.VMConfig(100)
	if cur["cores"] != "1" || cur["memory"] != "1024" || pend["cores"] != "4" || pend["memory"] != "2048" {
		t.Fatalf("cores/memory should be pending: cur %v pending %v", cur, pend)
	}
	if cur["name"] != "b" || cur["description"] != "hello" || !strings.HasSuffix(cur["net0"], "tag=30") || cur["scsi1"] == "" {
		t.Fatalf("hot-pluggable values not applied: %v", cur)
	}
	p := pendingMap(t, vm)
	if p["cores"].Pending != float64(4) || p["cores"].Value != float64(1) || p["memory"].Pending != "2048" {
		t.Fatalf("pending endpoint: %+v", p)
	}
	// GET config shows pending values applied; current=1 does not.
	if err := vm.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if *vm.VirtualMachineConfig.Cores != 4 {
		t.Fatalf("config with pending: cores %d", *vm.VirtualMachineConfig.Cores)
	}
	_, body := rawCall(t, s, "GET", "/nodes/pve1/qemu/100/config?current=1", "", nil)
	if !strings.Contains(body, `"cores":1`) {
		t.Fatalf("current config: %s", body)
	}
	// The running VM still has its old memory accounted.
	if _, used := s.NodeMemory("pve1"); used != hostReservedMiB+1024 {
		t.Fatalf("memory in use %d", used)
	}
	// A reboot applies the pending changes.
	task, _ = vm.Reboot(ctx)
	waitOK(t, ctx, task)
	cur, pend, _ = s.VMConfig(100)
	if cur["cores"] != "4" || cur["memory"] != "2048" || len(pend) != 0 {
		t.Fatalf("after reboot: %v %v", cur, pend)
	}
	if _, used := s.NodeMemory("pve1"); used != hostReservedMiB+2048 {
		t.Fatalf("memory in use after reboot %d", used)
	}
}

func TestConfigUpdateRules(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	ctx := ctxT(t)
	node, _ := c.Node(ctx, "pve1")
	task, _ := node.NewVirtualMachine(ctx, 100, opt("cores", 1), opt("scsi0", "local-lvm:4"), opt("ide2", "local-lvm:cloudinit"), opt("tags", "x"), opt("net0", "virtio,bridge=vmbr0"))
	waitOK(t, ctx, task)
	vm, _ := node.VirtualMachine(ctx, 100)

	// Synchronous PUT on a stopped VM applies at once.
	if err := vm.ConfigSync(ctx, opt("cores", 2), opt("delete", "tags")); err != nil {
		t.Fatal(err)
	}
	cur, _, _ := s.VMConfig(100)
	if cur["cores"] != "2" || cur["tags"] != "" {
		t.Fatalf("after PUT: %v", cur)
	}
	// digest mismatch
	mustContain(t, vm.ConfigSync(ctx, opt("cores", 3), opt("digest", "0000")), "500 checksum mismatch (file change by other user?)")
	// nothing to do
	mustContain(t, vm.ConfigSync(ctx), "500 no options specified")
	// delete of an unknown option / conflicting with a value
	mustContain(t, vm.ConfigSync(ctx, opt("delete", "nosuch")), `"delete":"unknown option 'nosuch'"`)
	mustContain(t, vm.ConfigSync(ctx, opt("cores", 3), opt("delete", "cores")), `you can't use '-cores' and -delete cores' at the same time`)
	// Replacing a disk leaves the old one as unused0; deleting unused0 frees it.
	if err := vm.ConfigSync(ctx, opt("scsi0", "local-lvm:6")); err != nil {
		t.Fatal(err)
	}
	cur, _, _ = s.VMConfig(100)
	if cur["unused0"] != "local-lvm:vm-100-disk-0" || !strings.HasPrefix(cur["scsi0"], "local-lvm:vm-100-disk-1,") {
		t.Fatalf("replaced disk: %v", cur)
	}
	if err := vm.ConfigSync(ctx, opt("delete", "unused0")); err != nil {
		t.Fatal(err)
	}
	for _, v := range s.Volumes("pve1", "local-lvm") {
		if v.VolID == "local-lvm:vm-100-disk-0" {
			t.Fatal("unused disk not freed")
		}
	}
	// A second cloud-init drive is refused.
	task, _ = vm.Config(ctx, opt("ide0", "local-lvm:cloudinit"))
	if st := waitExit(t, ctx, task); st != "ide0 - cloud-init drive is already attached at 'ide2'" {
		t.Fatalf("second cloud-init drive: %q", st)
	}
	// An invalid boot order is refused.
	task, _ = vm.Config(ctx, opt("boot", "order=scsi0;virtio3"))
	if st := waitExit(t, ctx, task); st != "invalid bootorder: device 'virtio3' does not exist'" {
		t.Fatalf("boot order: %q", st)
	}
	// balloon larger than memory
	mustContain(t, vm.ConfigSync(ctx, opt("balloon", 4096)), "500 balloon value too large (must be smaller than assigned memory)")
	// The VM is locked while it is being created elsewhere: simulate with
	// the config lock.
	if err := s.SetVMConfig(100, "lock", "backup"); err != nil {
		t.Fatal(err)
	}
	_, err := vm.Config(ctx, opt("cores", 3))
	mustContain(t, err, "500 VM is locked (backup)")
	task, _ = vm.Start(ctx)
	if st := waitExit(t, ctx, task); st != "VM is locked (backup)" {
		t.Fatalf("start while locked: %q", st)
	}
}

func TestResize(t *testing.T) {
	t.Parallel()
	_, c := startLab(t, Options{})
	ctx := ctxT(t)
	node, _ := c.Node(ctx, "pve1")
	task, _ := node.NewVirtualMachine(ctx, 100, opt("virtio0", "local-lvm:8"), opt("ide2", "none,media=cdrom"))
	waitOK(t, ctx, task)
	vm, _ := node.VirtualMachine(ctx, 100)
	for _, tc := range []struct{ disk, size, want string }{
		{"virtio0", "+2G", "OK"},
		{"virtio0", "12G", "OK"},
		{"virtio0", "12G", "OK"}, // no change
		{"virtio0", "4G", "shrinking disks is not supported"},
		{"scsi0", "10G", "disk 'scsi0' does not exist"},
		{"ide2", "10G", "disk 'ide2' has no associated volume"},
	} {
		task, err := vm.ResizeDisk(ctx, tc.disk, tc.size)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.disk, tc.size, err)
		}
		if st := waitExit(t, ctx, task); st != tc.want {
			t.Fatalf("resize %s %s: %q, want %q", tc.disk, tc.size, st, tc.want)
		}
	}
	if err := vm.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if vm.VirtualMachineConfig.VirtIOs["virtio0"] != "local-lvm:vm-100-disk-0,size=12G" {
		t.Fatalf("virtio0 = %q", vm.VirtualMachineConfig.VirtIOs["virtio0"])
	}
	_, err := vm.ResizeDisk(ctx, "virtio0", "-2G")
	mustContain(t, err, `"size":"value does not match the regex pattern"`)
}

func TestCloneAndTemplate(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	ctx := ctxT(t)
	node, _ := c.Node(ctx, "pve1")
	task, _ := node.NewVirtualMachine(ctx, 100, opt("name", "base"), opt("scsi0", "local-lvm:4"), opt("ide2", "local-lvm:cloudinit"), opt("net0", "virtio,bridge=vmbr0"))
	waitOK(t, ctx, task)
	src, _ := node.VirtualMachine(ctx, 100)

	// Linked clones need a template.
	_, task, err := src.Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 101})
	if err != nil {
		t.Fatal(err)
	}
	waitOK(t, ctx, task) // full by default for a VM
	_, _, err = src.Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 102, Full: false, Target: "pve2"})
	mustContain(t, err, "500 can't clone VM to node 'pve2' (VM uses local storage)")

	task, err = src.ConvertToTemplate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitOK(t, ctx, task)
	if err := src.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if src.VirtualMachineConfig.SCSIs["scsi0"] != "local-lvm:base-100-disk-0,size=4G" || !bool(src.VirtualMachineConfig.Template) {
		t.Fatalf("template config: %+v", src.VirtualMachineConfig)
	}
	task, _ = src.Start(ctx)
	if st := waitExit(t, ctx, task); st != "you can't start a vm if it's a template" {
		t.Fatalf("start template: %q", st)
	}
	_, task, err = src.Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 102, Name: "linked"})
	if err != nil {
		t.Fatal(err)
	}
	waitOK(t, ctx, task)
	_, _, err = src.Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 103, Storage: "local-lvm"})
	mustContain(t, err, "500 parameter 'storage' not allowed for linked clones")
	_, _, err = src.Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 101})
	mustContain(t, err, "500 unable to create VM 101: config file already exists")

	srcCur, _, _ := s.VMConfig(100)
	linked, _, _ := s.VMConfig(102)
	if linked["scsi0"] != "local-lvm:base-100-disk-0/vm-102-disk-0,size=4G" || linked["name"] != "linked" || linked["template"] != "" {
		t.Fatalf("linked clone: %v", linked)
	}
	if linked["ide2"] != "local-lvm:vm-102-cloudinit,media=cdrom" {
		t.Fatalf("cloud-init drive of the clone: %q", linked["ide2"])
	}
	if linked["net0"] == srcCur["net0"] || linked["smbios1"] == srcCur["smbios1"] || linked["vmgenid"] == srcCur["vmgenid"] {
		t.Fatalf("clone kept identity: %v vs %v", linked, srcCur)
	}
	full, _, _ := s.VMConfig(101)
	if full["name"] != "Copy-of-VM-base" || full["scsi0"] != "local-lvm:vm-101-disk-0,size=4G" {
		t.Fatalf("full clone: %v", full)
	}
	// The template cannot go while a linked clone uses its base volume.
	task, _ = src.Delete(ctx, &proxmox.VirtualMachineDeleteOptions{Purge: true})
	if st := waitExit(t, ctx, task); st != "base volume 'local-lvm:base-100-disk-0' is still in use by linked cloned" {
		t.Fatalf("delete template: %q", st)
	}
	clone, _ := node.VirtualMachine(ctx, 102)
	task, _ = clone.Delete(ctx, &proxmox.VirtualMachineDeleteOptions{Purge: true})
	waitOK(t, ctx, task)
	task, _ = src.Delete(ctx, &proxmox.VirtualMachineDeleteOptions{Purge: true})
	waitOK(t, ctx, task)
	if vms := s.VMs(); len(vms) != 1 || vms[0].VMID != 101 {
		t.Fatalf("vms: %+v", vms)
	}
}

func TestDestroyUnreferencedDisks(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	ctx := ctxT(t)
	node, _ := c.Node(ctx, "pve1")
	task, _ := node.NewVirtualMachine(ctx, 100, opt("scsi0", "local-lvm:4"), opt("scsi1", "local-lvm:4"))
	waitOK(t, ctx, task)
	vm, _ := node.VirtualMachine(ctx, 100)
	// Detach scsi1 out of band: its volume is no longer referenced.
	if err := s.SetVMConfig(100, "scsi1", ""); err != nil {
		t.Fatal(err)
	}
	task, _ = vm.Delete(ctx, &proxmox.VirtualMachineDeleteOptions{Purge: true})
	waitOK(t, ctx, task)
	if vols := s.Volumes("pve1", "local-lvm"); len(vols) != 1 || vols[0].VolID != "local-lvm:vm-100-disk-1" {
		t.Fatalf("volumes: %+v", vols)
	}
	task, _ = node.NewVirtualMachine(ctx, 100, opt("scsi0", "local-lvm:4"))
	waitOK(t, ctx, task)
	vm, _ = node.VirtualMachine(ctx, 100)
	task, _ = vm.Delete(ctx, &proxmox.VirtualMachineDeleteOptions{Purge: true, DestroyUnreferencedDisks: true})
	waitOK(t, ctx, task)
	if vols := s.Volumes("pve1", "local-lvm"); len(vols) != 0 {
		t.Fatalf("volumes: %+v", vols)
	}
	if err := s.SetVMConfig(999, "cores", "1"); err == nil {
		t.Fatal("out-of-band change of a missing VM")
	}
}

func TestCreateDisksAndCapacity(t *testing.T) {
	t.Parallel()
	small := NodeSpec{Name: "pve1", Storages: []StorageSpec{
		{ID: "local", Type: "dir", Content: []string{"iso", "images"}, SizeGiB: 10},
		{ID: "local-lvm", Type: "lvmthin", Content: []string{"images"}, SizeGiB: 20},
	}}
	s, c := startLab(t, Options{Nodes: []NodeSpec{small}})
	ctx := ctxT(t)
	node, _ := c.Node(ctx, "pve1")
	// Drives need a storage in the value: the schema's volume format
	// refuses a bare size even with the "storage" parameter.
	_, err := node.NewVirtualMachine(ctx, 100, opt("storage", "local-lvm"), opt("scsi0", "8"))
	mustContain(t, err, `"scsi0":"invalid format - format error\nscsi0.file: invalid format - unable to parse volume ID '8'\n\n"`)
	task, err := node.NewVirtualMachine(ctx, 100, opt("scsi0", "local-lvm:8"), opt("bios", "ovmf"),
		opt("efidisk0", "local-lvm:1,efitype=4m,pre-enrolled-keys=0"), opt("tpmstate0", "local-lvm:1,version=v2.0"), opt("ide2", "local-lvm:cloudinit"))
	if err != nil {
		t.Fatal(err)
	}
	waitOK(t, ctx, task)
	cur, _, _ := s.VMConfig(100)
	want := map[string]string{
		// create_disks walks the keys sorted: efidisk0 before scsi0.
		"efidisk0":  "local-lvm:vm-100-disk-0,efitype=4m,pre-enrolled-keys=0,size=4M",
		"scsi0":     "local-lvm:vm-100-disk-1,size=8G",
		"tpmstate0": "local-lvm:vm-100-disk-2,size=4M,version=v2.0",
		"ide2":      "local-lvm:vm-100-cloudinit,media=cdrom",
	}
	for k, v := range want {
		if cur[k] != v {
			t.Errorf("%s = %q, want %q", k, cur[k], v)
		}
	}
	// Directory storage: qcow2 files, and a disk that does not fit fails.
	task, _ = node.NewVirtualMachine(ctx, 101, opt("scsi0", "local:4"))
	waitOK(t, ctx, task)
	cur, _, _ = s.VMConfig(101)
	if cur["scsi0"] != "local:101/vm-101-disk-0.qcow2,size=4G" {
		t.Fatalf("dir disk %q", cur["scsi0"])
	}
	task, _ = node.NewVirtualMachine(ctx, 102, opt("scsi0", "local:7"))
	if st := waitExit(t, ctx, task); !strings.Contains(st, "No space left on device") {
		t.Fatalf("overfull dir storage: %q", st)
	}
	// Thin pools over-provision with LVM's warning in the task log.
	task, _ = node.NewVirtualMachine(ctx, 103, opt("scsi0", "local-lvm:30"))
	waitOK(t, ctx, task)
	log, _ := task.Log(ctx, 0, 50)
	found := false
	for _, line := range log {
		found = found || strings.Contains(line, "WARNING: Sum of all thin volume sizes")
	}
	if !found {
		t.Fatalf("log %v", log)
	}
}

func TestMoveDisk(t *testing.T) {
	t.Parallel()
	node2 := NodeSpec{Name: "pve1", Storages: append(DefaultStorages(), StorageSpec{ID: "fast", Type: "lvmthin", Content: []string{"images"}, SizeGiB: 100})}
	s, c := startLab(t, Options{Nodes: []NodeSpec{node2}})
	ctx := ctxT(t)
	node, _ := c.Node(ctx, "pve1")
	task, _ := node.NewVirtualMachine(ctx, 100, opt("scsi0", "local-lvm:4,ssd=1"), opt("ide2", "local:iso/x.iso,media=cdrom"))
	if st := waitExit(t, ctx, task); st != "unable to create VM 100 - volume local:iso/x.iso does not exist" {
		t.Fatalf("missing iso: %q", st)
	}
	task, _ = node.NewVirtualMachine(ctx, 100, opt("scsi0", "local-lvm:4,ssd=1"), opt("ide2", "none,media=cdrom"))
	waitOK(t, ctx, task)
	vm, _ := node.VirtualMachine(ctx, 100)
	move := func(disk, storage string, del bool) (string, error) {
		task, err := vm.MoveDisk(ctx, disk, &proxmox.VirtualMachineMoveDiskOptions{Storage: storage, Delete: proxmox.IntOrBool(del)})
		if err != nil {
			return "", err
		}
		return waitExit(t, ctx, task), nil
	}
	if st, err := move("scsi0", "fast", false); err != nil || st != "OK" {
		t.Fatalf("move: %v %q", err, st)
	}
	cur, _, _ := s.VMConfig(100)
	if cur["scsi0"] != "fast:vm-100-disk-0,size=4G,ssd=1" || cur["unused0"] != "local-lvm:vm-100-disk-0" {
		t.Fatalf("after move: %v", cur)
	}
	if st, err := move("scsi0", "local-lvm", true); err != nil || st != "OK" {
		t.Fatalf("move back: %v %q", err, st)
	}
	cur, _, _ = s.VMConfig(100)
	if cur["scsi0"] != "local-lvm:vm-100-disk-1,size=4G,ssd=1" || len(s.Volumes("pve1", "fast")) != 0 {
		t.Fatalf("after move back: %v %v", cur, s.Volumes("pve1", "fast"))
	}
	_, err := move("scsi0", "local-lvm", false)
	mustContain(t, err, "500 you can't move to the same storage with same format")
	_, err = move("ide2", "fast", false)
	mustContain(t, err, "500 you can't move a cdrom")
	_, err = move("scsi1", "fast", false)
	mustContain(t, err, "500 disk 'scsi1' does not exist")
	_, err = move("scsi0", "local", false)
	mustContain(t, err, `"storage":"storage 'local' does not support vm images"`)
}
