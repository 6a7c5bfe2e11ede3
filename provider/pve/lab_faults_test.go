package pve_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
	labpve "github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// startLab runs a lab Proxmox VE (time scale 0 unless opts say otherwise)
// and connects a client to it.
func startLab(t *testing.T, opts labpve.Options) (*labpve.Server, *pve.Client, context.Context) {
	t.Helper()
	s, c, ctx, err := startAndConnect(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, c, ctx
}

// startAndConnect is startLab that returns the connection error.
func startAndConnect(t *testing.T, opts labpve.Options) (*labpve.Server, *pve.Client, context.Context, error) {
	t.Helper()
	if opts.Seed == 0 {
		opts.Seed = 7
	}
	s, err := labpve.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	c, err := pve.Connect(ctx, pve.Options{Endpoint: s.Endpoint(), APIToken: s.APIToken(), CACertPEM: string(s.CACertPEM())})
	return s, c, ctx, err
}

// A create whose node restarts mid-task: the wait rides out the node's 595s,
// the task reads "unexpected status" and the error says what that means;
// the VM stays with "lock: create". Every later operation on it ends with a
// StaleLockError that says how to get out after two refusals (not after the
// whole timeout of lock retries); once unlocked on the node (`qm unlock`),
// the same calls work.
func TestStaleCreateLockAfterNodeRestart(t *testing.T) {
	t.Parallel()
	s, c, ctx := startLab(t, labpve.Options{})
	ref := pve.VMRef{Node: "pve2", VMID: 150}
	s.SetFaults(labpve.Faults{NodeRestartOnTask: "qmcreate", NodeDowntime: 300 * time.Millisecond})
	err := c.CreateVM(ctx, ref, map[string]any{"cores": 1, "scsi0": "local-lvm:4"})
	var te *pve.TaskError
	if !errors.As(err, &te) || te.ExitStatus != "unexpected status" || !strings.Contains(err.Error(), "node restarted") {
		t.Fatalf("create across a node restart: %v", err)
	}

	// Two refusals with no task holding the lock are enough (retryVM);
	// the lab counts what it served, so a client that keeps retrying
	// (until its timeout, or a few more times) sends more.
	const update, destroy = "POST /nodes/{node}/qemu/{vmid}/config", "DELETE /nodes/{node}/qemu/{vmid}"
	err = c.UpdateVMConfig(ctx, ref, map[string]any{"cores": 2}, nil)
	var se *pve.StaleLockError
	if !errors.As(err, &se) || se.Lock != "create" || !strings.Contains(err.Error(), "qm unlock 150") {
		t.Fatalf("update of a VM with a stale create lock: %v", err)
	}
	if n := s.Calls(update); n != 2 {
		t.Errorf("the update was sent %d times, want 2 (refused twice with no task, then given up)", n)
	}
	if err := c.DeleteVM(ctx, ref); !errors.As(err, &se) {
		t.Fatalf("destroy of a VM with a stale create lock: %v", err)
	}
	if n := s.Calls(destroy); n != 2 {
		t.Errorf("the destroy was sent %d times, want 2", n)
	}

	if err := s.UnlockVM(150); err != nil {
		t.Fatal(err)
	}
	if err := c.UpdateVMConfig(ctx, ref, map[string]any{"cores": 2}, nil); err != nil {
		t.Fatalf("update after qm unlock: %v", err)
	}
	if err := c.DeleteVM(ctx, ref); err != nil {
		t.Fatalf("destroy after qm unlock: %v", err)
	}
	if vms := s.VMs(); len(vms) != 0 {
		t.Fatalf("VMs left: %+v", vms)
	}
}

// A lock held by a live task is waited for, not reported as stale: an
// update sent while a create is still running succeeds once it ends.
func TestLiveCreateLockIsWaitedFor(t *testing.T) {
	t.Parallel()
	s, c, ctx := startLab(t, labpve.Options{TimeScale: 1.5}) // the create task runs ~1.5s
	ref := pve.VMRef{Node: "pve1", VMID: 151}
	done := make(chan error, 1)
	go func() { done <- c.CreateVM(ctx, ref, map[string]any{"cores": 1}) }()
	for {
		if vms := s.VMs(); len(vms) == 1 && vms[0].Lock == "create" {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := c.UpdateVMConfig(ctx, ref, map[string]any{"cores": 3}, nil); err != nil {
		t.Fatalf("update during a live create: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if cur, _, _ := s.VMConfig(151); cur["cores"] != "3" {
		t.Fatalf("cores after the update: %v", cur)
	}
}

// A start sent while the VM's node is down is sent again once it is back:
// pveproxy's 595 proves the request never ran.
func TestStartRetriedAcrossNodeRestart(t *testing.T) {
	t.Parallel()
	s, c, ctx := startLab(t, labpve.Options{})
	ref := pve.VMRef{Node: "pve3", VMID: 152}
	if err := c.CreateVM(ctx, ref, map[string]any{"cores": 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.RestartNode("pve3", 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := c.StartVM(ctx, ref); err != nil {
		t.Fatalf("start across a node restart: %v", err)
	}
	if st, err := c.VMStatus(ctx, ref); err != nil || !st.Running() {
		t.Fatalf("status after start: %+v %v", st, err)
	}
}

// A reboot the guest ignores fails at once with PVE's text; it is not taken
// for a lock and retried until the operation's timeout.
func TestIgnoredRebootIsNotRetried(t *testing.T) {
	t.Parallel()
	s, c, ctx := startLab(t, labpve.Options{}) // no booter: nothing answers ACPI
	ref := pve.VMRef{Node: "pve1", VMID: 153}
	if err := c.CreateVM(ctx, ref, map[string]any{"cores": 1}); err != nil {
		t.Fatal(err)
	}
	if err := c.StartVM(ctx, ref); err != nil {
		t.Fatal(err)
	}
	err := c.RebootVM(ctx, ref, time.Second)
	if err == nil || !strings.Contains(err.Error(), "VM quit/powerdown failed - got timeout") {
		t.Fatalf("reboot of a guest that ignores ACPI: %v", err)
	}
	// counted by the lab: a retry as a lock or as a task failure that
	// passes would send it again (and again end with the same text)
	if n := s.Calls("POST /nodes/{node}/qemu/{vmid}/status/reboot"); n != 1 {
		t.Errorf("the reboot was sent %d times, want 1: it was retried", n)
	}
}

// A clone whose node restarts while it copies leaves the new VM with
// "lock: clone" and half its disks; the error on the next operation says to
// destroy it on the node (its disks cannot be trusted), not to unlock it.
func TestStaleCloneLockAfterNodeRestart(t *testing.T) {
	t.Parallel()
	s, c, ctx := startLab(t, labpve.Options{})
	tmpl := pve.VMRef{Node: "pve1", VMID: 160}
	if err := c.CreateVM(ctx, tmpl, map[string]any{"scsi0": "local-lvm:2", "template": 1}); err != nil {
		t.Fatal(err)
	}
	s.SetFaults(labpve.Faults{NodeRestartOnTask: "qmclone", NodeDowntime: 300 * time.Millisecond})
	clone := pve.VMRef{Node: "pve1", VMID: 161}
	err := c.CloneVM(ctx, tmpl, clone, pve.CloneOptions{Full: true})
	if err == nil || !strings.Contains(err.Error(), "unexpected status") {
		t.Fatalf("clone across a node restart: %v", err)
	}
	err = c.StartVM(ctx, clone)
	var se *pve.StaleLockError
	if !errors.As(err, &se) || se.Lock != "clone" || !strings.Contains(err.Error(), "qm destroy 161 --skiplock") {
		t.Fatalf("start of a VM with a stale clone lock: %v", err)
	}
}
