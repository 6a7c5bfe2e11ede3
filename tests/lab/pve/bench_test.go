package pve

import (
	"context"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
)

// BenchmarkVMLifecycle measures one create, start, stop and delete through
// go-proxmox at time scale 0 (tasks polled every millisecond).
func BenchmarkVMLifecycle(b *testing.B) {
	s, err := Start(Options{Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c := proxmox.NewClient(s.APIURL(), proxmox.WithAPIToken("root@pam!lab", s.opts.TokenSecret), proxmox.WithRootCAs(certPool(s)))
	ctx := context.Background()
	node, err := c.Node(ctx, "pve1")
	if err != nil {
		b.Fatal(err)
	}
	wait := func(task *proxmox.Task, err error) {
		if err != nil {
			b.Fatal(err)
		}
		if err := task.Wait(ctx, time.Millisecond, 10*time.Second); err != nil || task.ExitStatus != "OK" {
			b.Fatalf("%v %s", err, task.ExitStatus)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		wait(node.NewVirtualMachine(ctx, 100, opt("scsi0", "local-lvm:8"), opt("net0", "virtio,bridge=vmbr0"), opt("memory", "1024")))
		vm, err := node.VirtualMachine(ctx, 100)
		if err != nil {
			b.Fatal(err)
		}
		wait(vm.Start(ctx))
		wait(vm.Stop(ctx))
		wait(vm.Delete(ctx, &proxmox.VirtualMachineDeleteOptions{Purge: true}))
	}
}
