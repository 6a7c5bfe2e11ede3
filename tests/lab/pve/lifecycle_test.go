package pve

import (
	"strings"
	"testing"

	proxmox "github.com/luthermonson/go-proxmox"
)

// TestLifecycle drives a VM through create, config, start, stop and delete
// with go-proxmox, as the provider does.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	ctx := ctxT(t)

	v, err := c.Version(ctx)
	if err != nil || v.Version != Version {
		t.Fatalf("version: %v %+v", err, v)
	}
	nodes, err := c.Nodes(ctx)
	if err != nil || len(nodes) != 3 || nodes[0].Node != "pve1" || nodes[0].Status != "online" {
		t.Fatalf("nodes: %v %+v", err, nodes)
	}
	node, err := c.Node(ctx, "pve1")
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	if node.Memory.Total != 65536<<20 {
		t.Fatalf("node memory total %d", node.Memory.Total)
	}
	cl, err := c.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id, err := cl.NextID(ctx)
	if err != nil || id != 100 {
		t.Fatalf("nextid: %v %d", err, id)
	}

	task, err := node.NewVirtualMachine(ctx, id,
		opt("name", "web1"), opt("cores", 2), opt("memory", "2048"),
		opt("scsihw", "virtio-scsi-single"), opt("scsi0", "local-lvm:8,iothread=1"),
		opt("net0", "virtio,bridge=vmbr0"), opt("agent", "1"), opt("tags", "b;A"),
	)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	waitOK(t, ctx, task)
	if id2, _ := cl.NextID(ctx); id2 != 101 {
		t.Fatalf("nextid after create = %d", id2)
	}

	vm, err := node.VirtualMachine(ctx, id)
	if err != nil {
		t.Fatalf("get vm: %v", err)
	}
	cfg := vm.VirtualMachineConfig
	if cfg.Name != "web1" || *cfg.Cores != 2 || cfg.Memory != 2048 {
		t.Fatalf("config: %+v", cfg)
	}
	if cfg.SCSIs["scsi0"] != "local-lvm:vm-100-disk-0,iothread=1,size=8G" {
		t.Fatalf("scsi0 = %q", cfg.SCSIs["scsi0"])
	}
	if !strings.HasPrefix(cfg.Nets["net0"], "virtio=BC:24:11:") || !strings.HasSuffix(cfg.Nets["net0"], ",bridge=vmbr0") {
		t.Fatalf("net0 = %q", cfg.Nets["net0"])
	}
	if cfg.Tags != "a;b" || !strings.HasPrefix(cfg.SMBios1, "uuid=") || cfg.VMGenID == nil || cfg.Boot != "order=scsi0;net0" {
		t.Fatalf("tags/smbios/vmgenid/boot: %q %q %v %q", cfg.Tags, cfg.SMBios1, cfg.VMGenID, cfg.Boot)
	}
	if vm.Status != "stopped" || vm.MaxMem != 2048<<20 {
		t.Fatalf("status: %s maxmem %d", vm.Status, vm.MaxMem)
	}

	task, err = vm.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitOK(t, ctx, task)
	if err := vm.Ping(ctx); err != nil || !vm.IsRunning() {
		t.Fatalf("after start: %v running=%v", err, vm.IsRunning())
	}
	if _, used := s.NodeMemory("pve1"); used != hostReservedMiB+2048 {
		t.Fatalf("node memory in use = %d", used)
	}

	// Stopping a running VM's delete is refused.
	_, err = vm.Delete(ctx, &proxmox.VirtualMachineDeleteOptions{Purge: true})
	mustContain(t, err, "500 VM 100 is running - destroy failed")

	task, err = vm.Stop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitOK(t, ctx, task)
	task, err = vm.Delete(ctx, &proxmox.VirtualMachineDeleteOptions{Purge: true, DestroyUnreferencedDisks: true})
	if err != nil {
		t.Fatal(err)
	}
	waitOK(t, ctx, task)
	if len(s.VMs()) != 0 || len(s.Volumes("pve1", "local-lvm")) != 0 {
		t.Fatalf("left over: %+v %+v", s.VMs(), s.Volumes("pve1", "local-lvm"))
	}
	_, err = node.VirtualMachine(ctx, id)
	mustContain(t, err, "500 Configuration file 'nodes/pve1/qemu-server/100.conf' does not exist")
}
