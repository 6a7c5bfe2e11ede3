package pve

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
)

func TestFaultInjection(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	ctx := ctxT(t)
	node, _ := c.Node(ctx, "pve1")
	task, _ := node.NewVirtualMachine(ctx, 100, opt("cores", 1))
	waitOK(t, ctx, task)
	vm, _ := node.VirtualMachine(ctx, 100)

	s.SetFaults(Faults{LockTimeoutRate: 1})
	task, err := vm.Config(ctx, opt("cores", 2))
	if err != nil {
		t.Fatal(err)
	}
	if st := waitExit(t, ctx, task); st != "can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout" {
		t.Fatalf("config under lock fault: %q", st)
	}
	mustContain(t, vm.ConfigSync(ctx, opt("cores", 2)), "500 can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout")
	_, err = node.NewVirtualMachine(ctx, 101)
	mustContain(t, err, "500 unable to create VM 101 - can't lock file '/var/lock/qemu-server/lock-101.conf' - got timeout")

	s.SetFaults(Faults{TaskFailureRate: 1})
	task, _ = vm.Start(ctx)
	if st := waitExit(t, ctx, task); st != "timeout waiting on systemd" {
		t.Fatalf("task fault: %q", st)
	}

	s.SetFaults(Faults{ServerErrorRate: 1})
	_, err = c.Nodes(ctx)
	mustContain(t, err, "500 lab fault injection: internal server error (ServerErrorRate)")

	s.SetFaults(Faults{})
	task, _ = vm.Start(ctx)
	waitOK(t, ctx, task)
	if f := s.Faults(); f.TaskFailureRate != 0 || f.ServerErrorRate != 0 || f.LockTimeoutRate != 0 || len(f.Script) != 0 {
		t.Fatalf("faults %+v", f)
	}
}

// TestLocksSerialise: concurrent config updates of one VM wait for each
// other's config lock; none is lost.
func TestLocksSerialise(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	ctx := ctxT(t)
	node, _ := c.Node(ctx, "pve1")
	task, _ := node.NewVirtualMachine(ctx, 100)
	waitOK(t, ctx, task)
	vm, _ := node.VirtualMachine(ctx, 100)
	var wg sync.WaitGroup
	keys := []string{"description", "onboot", "cores", "sockets", "tags", "name", "cpuunits", "protection"}
	vals := []any{"d", 1, 3, 2, "t", "n", 200, 0}
	errs := make(chan error, len(keys))
	for i := range keys {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			task, err := vm.Config(ctx, opt(keys[i], vals[i]))
			if err == nil {
				err = task.Wait(ctx, time.Millisecond, 10*time.Second)
				if err == nil && task.ExitStatus != "OK" {
					err = &apiError{msg: task.ExitStatus}
				}
			}
			errs <- err
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	cur, _, _ := s.VMConfig(100)
	if cur["description"] != "d" || cur["cores"] != "3" || cur["sockets"] != "2" || cur["name"] != "n" || cur["cpuunits"] != "200" || cur["protection"] != "0" {
		t.Fatalf("lost updates: %v", cur)
	}
}

// TestCreateLock: while the create worker runs, the config exists with
// "lock: create" and other operations are refused.
func TestCreateLock(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{TimeScale: 0.3})
	ctx := ctxT(t)
	node, _ := c.Node(ctx, "pve1")
	task, err := node.NewVirtualMachine(ctx, 100, opt("scsi0", "local-lvm:4"))
	if err != nil {
		t.Fatal(err)
	}
	vms := s.VMs()
	if len(vms) != 1 || vms[0].Lock != "create" {
		t.Fatalf("during create: %+v", vms)
	}
	_, body := rawCall(t, s, "POST", "/nodes/pve1/qemu/100/config", "", map[string][]string{"cores": {"2"}})
	if !strings.Contains(body, "VM is locked (create)") {
		t.Fatalf("config during create: %s", body)
	}
	if err := task.Wait(ctx, 20*time.Millisecond, 10*time.Second); err != nil || task.ExitStatus != "OK" {
		t.Fatalf("create: %v %q", err, task.ExitStatus)
	}
	if s.VMs()[0].Lock != "" {
		t.Fatal("lock not released")
	}
}

func TestNodeRestart(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	ctx := ctxT(t)
	vm := createStarted(t, ctx, c, 100)
	if err := s.RestartNode("pve1", 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	status, body := rawCall(t, s, "GET", "/nodes/pve1/qemu/100/status/current", "", nil)
	if status != "595 No route to host" || body != "" {
		t.Fatalf("offline node: %q %q", status, body)
	}
	nodes, _ := c.Nodes(ctx)
	if nodes[0].Status != "offline" {
		t.Fatalf("node status %q", nodes[0].Status)
	}
	time.Sleep(300 * time.Millisecond)
	if err := vm.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if vm.Status != "stopped" {
		t.Fatalf("VM survived a node restart: %s", vm.Status)
	}
}

// A hung node stays a cluster member (online, its VM as last reported),
// but what pveproxy proxies to it waits for the proxy's timeout and fails
// with 596; requests for other nodes are served; AnswerNode releases a
// request that waits. Stats count the requests per node.
func TestHungNode(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	ctx := ctxT(t)
	createStarted(t, ctx, c, 100)
	s.ResetStats()
	if err := s.HangNode("pve1", 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if status, body := rawCall(t, s, "GET", "/nodes/pve1/qemu/100/status/current", "", nil); status != "596 Connection timed out" || body != "" {
		t.Fatalf("hung node: %q %q", status, body)
	}
	if status, _ := rawCall(t, s, "GET", "/nodes/pve2/qemu", "", nil); status != "200 OK" {
		t.Fatalf("another node while pve1 hangs: %q", status)
	}
	nodes, err := c.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.Node == "pve1" && n.Status != "online" {
			t.Fatalf("a hung node is %q in /nodes, want online (it is still a cluster member)", n.Status)
		}
	}
	if vms := s.VMs(); vms[0].Status != "running" {
		t.Fatalf("the VM of a hung node: %+v", vms[0])
	}
	if err := s.HangNode("pve1", time.Hour); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	go func() {
		status, _ := rawCall(t, s, "GET", "/nodes/pve1/qemu/100/status/current", "", nil)
		done <- status
	}()
	for s.NodeWaiting("pve1") == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	if err := s.AnswerNode("pve1"); err != nil {
		t.Fatal(err)
	}
	if status := <-done; status != "200 OK" {
		t.Fatalf("a request waiting for the node when it answers again: %q", status)
	}
	if st := s.Stats(); st.ByNode["pve1"] != 2 || st.ByNode["pve2"] != 1 {
		t.Fatalf("requests by node: %v", st.ByNode)
	}
	if s.HangNode("nosuch", time.Second) == nil || s.AnswerNode("nosuch") == nil {
		t.Fatal("an unknown node hung or answered")
	}
}

// A node that is down comes back at once on PowerOnNode and starts its
// onboot VMs; a node that is up is left alone.
func TestPowerOnNodeEndsTheOutage(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	ctx := ctxT(t)
	createStarted(t, ctx, c, 100, opt("onboot", "1"))
	if err := s.PowerOnNode("pve1"); err != nil {
		t.Fatal(err)
	}
	if err := s.RestartNode("pve1", time.Hour); err != nil {
		t.Fatal(err)
	}
	if s.NodeOnline("pve1") || s.VMs()[0].Status != "stopped" {
		t.Fatalf("node online %v, VMs %+v after the power loss", s.NodeOnline("pve1"), s.VMs())
	}
	if err := s.PowerOnNode("pve1"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200 && (!s.NodeOnline("pve1") || s.VMs()[0].Status != "running"); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if !s.NodeOnline("pve1") || s.VMs()[0].Status != "running" {
		t.Fatalf("node online %v, VMs %+v after PowerOnNode", s.NodeOnline("pve1"), s.VMs())
	}
	if err := s.PowerOnNode("nosuch"); err == nil {
		t.Fatal("PowerOnNode of an unknown node succeeded")
	}
}

func TestShutdown(t *testing.T) {
	t.Parallel()
	_, c := startLab(t, Options{})
	ctx := ctxT(t)
	// Nothing boots: ACPI shutdown is never answered.
	vm := createStarted(t, ctx, c, 100)
	task, _ := vm.Shutdown(ctx)
	if st := waitExit(t, ctx, task); st != "VM quit/powerdown failed - got timeout" {
		t.Fatalf("shutdown: %q", st)
	}
	task, _ = vm.Stop(ctx)
	waitOK(t, ctx, task)
	// Stopping a stopped VM is fine; rebooting it is not.
	task, _ = vm.Stop(ctx)
	waitOK(t, ctx, task)
	_, err := vm.Reboot(ctx)
	mustContain(t, err, "500 VM 100 not running")
	_, err = vm.Reset(ctx)
	mustContain(t, err, "500 VM 100 not running")
}

// TestParallelClonesShareTheSourceLock: clones of a template hold its
// config lock shared (lock_config_shared), so many run at once even when
// each takes longer than a lock wait. The lab holds every clone in the
// middle of its copy, with both locks taken, until the test has seen all
// four get there: with the source locked exclusively the first one keeps
// the lock and the others fail their lock wait ("can't lock file"), so the
// test fails on events, not on how fast the four start.
func TestParallelClonesShareTheSourceLock(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	ctx := ctxT(t)
	node, _ := c.Node(ctx, "pve1")
	if err := s.createTemplateForTest(100); err != nil {
		t.Fatal(err)
	}
	tmpl, err := node.VirtualMachine(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	hold := s.holdClonesForTest(4)
	released := false
	release := func() {
		if !released {
			released = true
			close(hold.release)
		}
	}
	defer release()
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		go func(id int) {
			_, task, err := tmpl.Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: id})
			if err == nil {
				err = task.Wait(ctx, 50*time.Millisecond, time.Hour) // ctxT bounds it
				if err == nil && task.ExitStatus != "OK" {
					err = fmt.Errorf("clone %d: %s", id, task.ExitStatus)
				}
			}
			errs <- err
		}(101 + i)
	}
	copying := map[int]bool{}
	for len(copying) < 4 {
		select {
		case id := <-hold.copying:
			copying[id] = true
		case err := <-errs:
			t.Fatalf("a clone ended while only %v held the source's lock and copied (want all 4 at once: they "+
				"did not share the source's lock): %v", copying, err)
		case <-ctx.Done():
			t.Fatalf("clones copying: %v: %v", copying, ctx.Err())
		}
	}
	if n := clonesCopying(s); n != 4 {
		t.Errorf("%d VMs show \"lock: clone\" while the 4 clones are held in their copy", n)
	}
	release()
	for i := 0; i < 4; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := clonesCopying(s); n != 0 {
		t.Errorf("%d VMs still show \"lock: clone\" after their clones ended", n)
	}
}

// clonesCopying counts the VMs that hold "lock: clone": clones copying now.
func clonesCopying(s *Server) int {
	n := 0
	for _, v := range s.VMs() {
		if v.Lock == "clone" {
			n++
		}
	}
	return n
}
