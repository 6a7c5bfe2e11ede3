package lab

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/factory"
)

// A schematic with custom kernel arguments is unknown to the factory: its
// ISO cannot be downloaded (wget's 404, as on real Proxmox against the real
// factory). Registered with POST /schematics, the ISO downloads and a VM
// booting it gets exactly the schematic's extensions: here the guest agent.
func TestFactorySchematicReachesTheVM(t *testing.T) {
	t.Parallel()

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	l, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { l.Close() }) //nolint:errcheck

	body := "customization:\n  extraKernelArgs: [console=ttyS0]\n  systemExtensions:\n    officialExtensions: [siderolabs/qemu-guest-agent]\n"

	sch, err := factory.ParseSchematic([]byte(body))
	if err != nil {
		t.Fatal(err)
	}

	id, _ := sch.ID() //nolint:errcheck // parsed
	iso := l.FactoryURL() + "/image/" + id + "/v1.12.5/nocloud-amd64.iso"

	c := pveClient(t, l)

	node, err := c.Node(ctx, "pve1")
	if err != nil {
		t.Fatal(err)
	}

	download := func() *proxmox.Task {
		upid, err := node.StorageDownloadURL(ctx, &proxmox.StorageDownloadURLOptions{
			Node: "pve1", Storage: "local", Content: "iso", Filename: "custom.iso", URL: iso,
		})
		if err != nil {
			t.Fatal(err)
		}

		task := proxmox.NewTask(proxmox.UPID(upid), c)
		if err := task.Wait(ctx, 5*time.Millisecond, 30*time.Second); err != nil {
			t.Fatal(err)
		}

		return task
	}

	if task := download(); !strings.Contains(task.ExitStatus, "exit code 8") {
		t.Fatalf("download of an unregistered schematic's ISO: exit status %q, want wget's exit code 8", task.ExitStatus)
	} else if log := taskLog(ctx, task); !strings.Contains(log, "ERROR 404: Not Found.") {
		t.Errorf("task log lacks wget's 404:\n%s", log)
	}

	resp, err := http.Post(l.FactoryURL()+"/schematics", "application/yaml", strings.NewReader(body)) //nolint:noctx // test
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /schematics: %s", resp.Status)
	}

	if task := download(); task.ExitStatus != "OK" {
		t.Fatalf("download after registration: %q", task.ExitStatus)
	}

	addr := l.Address(20)

	task, err := node.NewVirtualMachine(ctx, 100,
		proxmox.VirtualMachineOption{Name: "memory", Value: 2048},
		proxmox.VirtualMachineOption{Name: "scsi0", Value: "local-lvm:10"},
		proxmox.VirtualMachineOption{Name: "ide2", Value: "local:iso/custom.iso,media=cdrom"},
		proxmox.VirtualMachineOption{Name: "ide0", Value: "local-lvm:cloudinit"},
		proxmox.VirtualMachineOption{Name: "boot", Value: "order=scsi0;ide2"},
		proxmox.VirtualMachineOption{Name: "net0", Value: "virtio,bridge=vmbr0"},
		proxmox.VirtualMachineOption{Name: "ipconfig0", Value: fmt.Sprintf("ip=%s/24", addr)},
		proxmox.VirtualMachineOption{Name: "agent", Value: "1"},
	)
	waitTask(t, ctx, task, err)

	vm, err := node.VirtualMachine(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}

	task, err = vm.Start(ctx)
	waitTask(t, ctx, task, err)

	if err := vm.WaitForAgent(ctx, 10); err != nil {
		t.Fatalf("guest agent of a VM booted from the registered schematic: %v", err)
	}
}

func taskLog(ctx context.Context, task *proxmox.Task) string {
	lines, _ := task.Log(ctx, 0, 50) //nolint:errcheck // an empty log fails the caller's check
	keys := slices.Sorted(maps.Keys(lines))
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, lines[k])
	}

	return strings.Join(out, "\n")
}
