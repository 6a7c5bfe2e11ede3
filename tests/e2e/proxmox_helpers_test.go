package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// proxmoxLab is an in-process lab whose VMs run pve.BasicBooter guests (an ISO
// downloaded from a URL with "agent" in it runs a QEMU guest agent).
type proxmoxLab struct {
	*lab.Lab
	conn harness.Lab
	api  *proxmox.Client
}

func startProxmoxLab(t *testing.T) *proxmoxLab {
	t.Helper()
	l, err := lab.Start(context.Background(), lab.Options{Booter: pve.BasicBooter})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return &proxmoxLab{
		Lab:  l,
		conn: harness.LabOf(l),
		api:  adminClient(t, l),
	}
}

// address returns host's address in the lab's 127.X.Y.0/24 block.
func (l *proxmoxLab) address(host byte) string {
	return l.Address(host).String()
}

// makeVM creates a small stopped VM through the API, outside any Pulumi program.
func (l *proxmoxLab) makeVM(t *testing.T, node string, vmid int, name string, template bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := l.api.Node(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	task, err := n.NewVirtualMachine(ctx, vmid,
		proxmox.VirtualMachineOption{Name: "name", Value: name},
		proxmox.VirtualMachineOption{Name: "memory", Value: "512"},
		proxmox.VirtualMachineOption{Name: "scsi0", Value: "local-lvm:2"},
		proxmox.VirtualMachineOption{Name: "net0", Value: "virtio,bridge=vmbr0"})
	if err != nil {
		t.Fatal(err)
	}
	waitTaskOK(ctx, t, task, "creating VM "+name)
	if !template {
		return
	}
	vm, err := n.VirtualMachine(ctx, vmid)
	if err != nil {
		t.Fatal(err)
	}
	task, err = vm.ConvertToTemplate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if task != nil {
		waitTaskOK(ctx, t, task, "converting VM "+name+" to a template")
	}
}

// vmIDs lists the lab's VMs that are not templates.
func (l *proxmoxLab) vmIDs() map[int]pve.VMInfo {
	out := map[int]pve.VMInfo{}
	for _, v := range l.VMs() {
		if !v.Template {
			out[v.VMID] = v
		}
	}
	return out
}

func mustOK(t *testing.T, what string, r harness.Result) harness.Result {
	t.Helper()
	if r.ExitCode != 0 {
		t.Fatalf("%s: %s", what, r)
	}
	return r
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscanf(strings.TrimSpace(s), "%d", &n); err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return n
}

// hasISO reports whether the lab's ISO storage of node holds fileName.
func (l *proxmoxLab) hasISO(node, fileName string) bool {
	for _, v := range l.PVE.Volumes(node, "local") {
		if v.VolID == "local:iso/"+fileName {
			return true
		}
	}
	return false
}

// destroyDeletesISO runs destroy and checks that the ISO a DownloadFile
// downloaded was there before and is gone after.
func (l *proxmoxLab) destroyDeletesISO(t *testing.T, node, fileName string, destroy func()) {
	t.Helper()
	if !l.hasISO(node, fileName) {
		t.Fatalf("before destroy: no %s on node %s", fileName, node)
	}
	destroy()
	if l.hasISO(node, fileName) {
		t.Fatalf("destroy left local:iso/%s on node %s", fileName, node)
	}
}
