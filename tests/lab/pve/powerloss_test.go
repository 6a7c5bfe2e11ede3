package pve

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
)

// taskStatusRaw reads /tasks/{upid}/status without go-proxmox, which cannot
// decode the empty body of a 595.
func taskStatusRaw(t *testing.T, s *Server, upid string) (httpStatus, status, exit string) {
	t.Helper()
	node := strings.Split(upid, ":")[1]
	code, body := rawCall(t, s, "GET", "/nodes/"+node+"/tasks/"+url.PathEscape(upid)+"/status", "", nil)
	var r struct {
		Data struct {
			Status     string `json:"status"`
			ExitStatus string `json:"exitstatus"`
		} `json:"data"`
	}
	_ = json.Unmarshal([]byte(body), &r)
	return code, r.Data.Status, r.Data.ExitStatus
}

// waitNodeBack polls a task's status until its node answers again and the
// task is stopped, and returns the exit status. The bound is a guard
// against hanging, not a speed check.
func waitNodeBack(t *testing.T, s *Server, upid string) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		code, st, exit := taskStatusRaw(t, s, upid)
		if code == "200 OK" && st == "stopped" {
			return exit
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("task %s had not stopped after a minute (a hang guard)", upid)
	return ""
}

// A node that loses power in the middle of a create kills the qmcreate
// worker: no cleanup runs (qemu-server API2/Qemu.pm removes the config
// only from the worker's error handler), so the config stays with
// "lock: create", which an API token can neither edit nor destroy; the
// task reads "unexpected status" (pve-common UPID.pm read_status).
func TestPowerLossMidCreateLeavesLockedConfig(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	ctx := ctxT(t)
	node, _ := c.Node(ctx, "pve2")
	// down until the test brings it back: the worker takes it down at its
	// first wait, which may come after the create's answer, and a short
	// downtime could end before the status read below
	s.SetFaults(Faults{NodeRestartOnTask: "qmcreate", NodeDowntime: time.Hour})
	task, err := node.NewVirtualMachine(ctx, 120, opt("scsi0", "local-lvm:4"), opt("cores", 2))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 500 && s.NodeOnline("pve2"); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if code, _, _ := taskStatusRaw(t, s, string(task.UPID)); code != "595 No route to host" {
		t.Fatalf("task status while the node is down: %q", code)
	}
	if err := s.PowerOnNode("pve2"); err != nil {
		t.Fatal(err)
	}
	if exit := waitNodeBack(t, s, string(task.UPID)); exit != "unexpected status" {
		t.Fatalf("exit status of a worker killed by a power loss: %q", exit)
	}
	log, _ := task.Log(ctx, 0, 100)
	for _, line := range log {
		if strings.HasPrefix(line, "TASK ") {
			t.Fatalf("a killed worker wrote a final line: %q", line)
		}
	}
	cur, _, ok := s.VMConfig(120)
	if !ok || cur["lock"] != "create" || cur["scsi0"] != "" {
		t.Fatalf("config after the power loss: %v (exists %v)", cur, ok)
	}
	_, body := rawCall(t, s, "POST", "/nodes/pve2/qemu/120/config", "", url.Values{"cores": {"4"}})
	if !strings.Contains(body, "VM is locked (create)") {
		t.Fatalf("config of a create-locked VM: %s", body)
	}
	vm, err := node.VirtualMachine(ctx, 120)
	if err != nil {
		t.Fatal(err)
	}
	dt, err := vm.Delete(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if exit := waitExit(t, ctx, dt); exit != "VM is locked (create)" {
		t.Fatalf("destroy of a create-locked VM: %q", exit)
	}
	// what `qm unlock 120` does on the node
	if err := s.UnlockVM(120); err != nil {
		t.Fatal(err)
	}
	dt, _ = vm.Delete(ctx, nil)
	waitOK(t, ctx, dt)
	if len(s.VMs()) != 0 {
		t.Fatalf("VMs left: %+v", s.VMs())
	}
}

// A clone whose node loses power while it copies leaves the temporary
// "lock: clone" config (clone_vm writes it before copying); a clone
// interrupted by a task stop cleans up and says so.
func TestPowerLossMidCloneAndInterruptedClone(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{TimeScale: 0.5})
	ctx := ctxT(t)
	if err := s.createTemplateForTest(100); err != nil {
		t.Fatal(err)
	}
	node, _ := c.Node(ctx, "pve1")
	tmpl, _ := node.VirtualMachine(ctx, 100)

	s.SetFaults(Faults{NodeRestartOnTask: "qmclone", NodeDowntime: 200 * time.Millisecond})
	_, task, err := tmpl.Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 101, Full: true})
	if err != nil {
		t.Fatal(err)
	}
	if exit := waitNodeBack(t, s, string(task.UPID)); exit != "unexpected status" {
		t.Fatalf("killed clone: %q", exit)
	}
	if cur, _, ok := s.VMConfig(101); !ok || cur["lock"] != "clone" || cur["scsi0"] != "" {
		t.Fatalf("config after the power loss mid-clone: %v (exists %v)", cur, ok)
	}
	if f := s.Faults(); f.NodeRestartOnTask != "" {
		t.Fatalf("the one-shot restart is still armed: %+v", f)
	}

	_, task, err = tmpl.Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 102, Full: true})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the copy takes ~0.5s at this time scale
	if _, err := rawStop(t, s, string(task.UPID)); err != nil {
		t.Fatal(err)
	}
	if exit := waitExit(t, ctx, task); exit != "clone failed: interrupted by signal" {
		t.Fatalf("stopped clone: %q", exit)
	}
	if _, _, ok := s.VMConfig(102); ok {
		t.Fatal("a stopped clone left its VM behind")
	}
}

func rawStop(t *testing.T, s *Server, upid string) (string, error) {
	node := strings.Split(upid, ":")[1]
	code, _ := rawCall(t, s, "DELETE", "/nodes/"+node+"/tasks/"+url.PathEscape(upid), "", nil)
	return code, nil
}

// An injected task failure is a worker that failed before doing its work:
// its error handling runs, so a failed create leaves no config behind.
func TestInjectedTaskFailureCleansUp(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	ctx := ctxT(t)
	node, _ := c.Node(ctx, "pve1")
	s.SetFaults(Faults{TaskFailureRate: 1})
	task, err := node.NewVirtualMachine(ctx, 130, opt("scsi0", "local-lvm:4"))
	if err != nil {
		t.Fatal(err)
	}
	if exit := waitExit(t, ctx, task); !strings.HasSuffix(exit, "failed: got timeout") {
		t.Fatalf("create with TaskFailureRate 1: %q", exit)
	}
	if vms := s.VMs(); len(vms) != 0 {
		t.Fatalf("a failed create left %+v", vms)
	}
	if vols := s.Volumes("pve1", "local-lvm"); len(vols) != 0 {
		t.Fatalf("a failed create left volumes %+v", vols)
	}
}

// NodeRestartRate strikes running tasks: with rate 1 every worker dies with
// its node, running VMs on it stop, and the node answers again afterwards.
func TestNodeRestartRate(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	ctx := ctxT(t)
	running := createStarted(t, ctx, c, 100)
	s.SetFaults(Faults{NodeRestartRate: 1, NodeDowntime: 150 * time.Millisecond})
	node, _ := c.Node(ctx, "pve1")
	task, err := node.NewVirtualMachine(ctx, 140)
	if err != nil {
		t.Fatal(err)
	}
	if exit := waitNodeBack(t, s, string(task.UPID)); exit != "unexpected status" {
		t.Fatalf("create under NodeRestartRate 1: %q", exit)
	}
	s.SetFaults(Faults{})
	if err := running.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if running.Status != "stopped" {
		t.Fatalf("VM 100 survived the power loss: %s", running.Status)
	}
}

// ServerErrorOnCall fails the next call of one method and path with a 500
// before it does anything, once.
func TestServerErrorOnCall(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	ctx := ctxT(t)
	node, _ := c.Node(ctx, "pve1")
	s.SetFaults(Faults{ServerErrorOnCall: "POST /nodes/{node}/qemu"})
	if _, err := c.Nodes(ctx); err != nil {
		t.Fatalf("another call was hit: %v", err)
	}
	_, err := node.NewVirtualMachine(ctx, 170)
	mustContain(t, err, "500 lab fault injection: internal server error")
	if len(s.VMs()) != 0 || s.Faults().ServerErrorOnCall != "" {
		t.Fatalf("after the injected error: VMs %+v, faults %+v", s.VMs(), s.Faults())
	}
	task, err := node.NewVirtualMachine(ctx, 170)
	if err != nil {
		t.Fatal(err)
	}
	waitOK(t, ctx, task)
}
