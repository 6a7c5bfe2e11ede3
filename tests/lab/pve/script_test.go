package pve

import (
	"strings"
	"testing"
	"time"
)

func TestParseFaultScript(t *testing.T) {
	rules, err := ParseFaultScript("call=POST /nodes/{node}/qemu/{vmid}/status/start,nth=2,count=-1,status=503; " +
		"task=qmstart,node=pve2,msg=start failed: QEMU exited with code 1, really;" +
		"task=qmcreate,node-off,for=3s; power-off=pve3,after=10s,for=30s; task=qmcreate,hold")
	if err != nil {
		t.Fatal(err)
	}
	want := []FaultRule{
		{Call: "POST /nodes/{node}/qemu/{vmid}/status/start", Nth: 2, Count: -1, Status: 503},
		{Task: "qmstart", Node: "pve2", Message: "start failed: QEMU exited with code 1, really"},
		{Task: "qmcreate", NodeOff: true, For: 3 * time.Second},
		{PowerOff: "pve3", After: 10 * time.Second, For: 30 * time.Second},
		{Task: "qmcreate", Hold: true},
	}
	if len(rules) != len(want) {
		t.Fatalf("got %d rules: %+v", len(rules), rules)
	}
	for i := range want {
		if rules[i] != want[i] {
			t.Errorf("rule %d: got %+v, want %+v", i, rules[i], want[i])
		}
	}
	for _, bad := range []string{"nth=1", "call=/nodes,task=qmstart", "call=nodes", "task=qmstart,bogus=1",
		"call=GET /version,node-off", "call=GET /version,status=200", "task=x,nth=a", "call=GET /version,hold",
		"task=qmcreate,hold,node-off"} {
		if _, err := ParseFaultScript(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// A call rule fails exactly the Nth..Nth+Count-1 matching calls, with its
// status, before they do anything; other calls pass.
func TestScriptFailsNthCall(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	ctx := ctxT(t)
	node, _ := c.Node(ctx, "pve1")
	s.SetFaults(Faults{Script: []FaultRule{{Call: "POST /nodes/{node}/qemu", Nth: 2, Count: 2},
		{Call: "GET /version", Status: 503, Message: "Service Unavailable"}}})
	var results []string
	for id := 100; id < 105; id++ {
		task, err := node.NewVirtualMachine(ctx, id)
		if err != nil {
			results = append(results, err.Error())
			continue
		}
		waitOK(t, ctx, task)
		results = append(results, "ok")
	}
	if results[0] != "ok" || results[3] != "ok" || results[4] != "ok" ||
		!strings.Contains(results[1], "500 lab fault injection") || !strings.Contains(results[2], "500 lab fault") {
		t.Fatalf("results %q", results)
	}
	if code, _ := rawCall(t, s, "GET", "/version", "", nil); code != "503 Service Unavailable" {
		t.Fatalf("GET /version: %s", code)
	}
	if code, _ := rawCall(t, s, "GET", "/version", "", nil); code != "200 OK" {
		t.Fatalf("second GET /version: %s", code)
	}
	if n := len(s.VMs()); n != 3 {
		t.Fatalf("%d VMs, want 3: a failed call must not create", n)
	}
	if st := s.FaultStrikes(); len(st) != 3 || st[0].What != "POST /nodes/pve1/qemu" {
		t.Fatalf("strikes %+v", st)
	}
}

// A task rule fails the Nth task of its type with a transient failure
// Proxmox really reports (or the rule's message), running the worker's
// cleanup; node limits it to one node.
func TestScriptFailsTaskType(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	ctx := ctxT(t)
	vm := createStarted(t, ctx, c, 100)
	task, _ := vm.Stop(ctx)
	waitOK(t, ctx, task)
	s.SetFaults(Faults{Script: []FaultRule{
		{Task: "qmstart", Node: "pve2"}, // never strikes: the VM is on pve1
		{Task: "qmstart"},
		{Task: "qmstart", Nth: 2, Message: "start failed: QEMU exited with code 1"},
		{Task: "qmcreate"},
	}})
	task, _ = vm.Start(ctx)
	if exit := waitExit(t, ctx, task); exit != "timeout waiting on systemd" {
		t.Fatalf("first start: %q", exit)
	}
	task, _ = vm.Start(ctx)
	if exit := waitExit(t, ctx, task); exit != "start failed: QEMU exited with code 1" {
		t.Fatalf("second start: %q", exit)
	}
	task, _ = vm.Start(ctx)
	waitOK(t, ctx, task)
	node, _ := c.Node(ctx, "pve1")
	task, err := node.NewVirtualMachine(ctx, 101, opt("scsi0", "local-lvm:4"))
	if err != nil {
		t.Fatal(err)
	}
	if exit := waitExit(t, ctx, task); !strings.HasPrefix(exit, "unable to create VM 101 - command") {
		t.Fatalf("create: %q", exit)
	}
	if len(s.VMs()) != 1 || len(s.Volumes("pve1", "local-lvm")) != 0 {
		t.Fatalf("the failed create left %+v %+v", s.VMs(), s.Volumes("pve1", "local-lvm"))
	}
}

// A hold task rule keeps its task running until the test releases it: a
// create shows only "lock: create" meanwhile, as during create_vm's worker
// (qemu-server API2/Qemu.pm), and its whole config once it ends; with a
// message it then fails and removes the config.
func TestScriptHoldsTask(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	ctx := ctxT(t)
	node, _ := c.Node(ctx, "pve1")
	s.SetFaults(Faults{Script: []FaultRule{{Task: "qmcreate", Hold: true},
		{Task: "qmcreate", Hold: true, Nth: 2, Message: "unable to create VM 131 - import failed"}}})
	held, err := node.NewVirtualMachine(ctx, 130, opt("scsi0", "local-lvm:4"), opt("tags", "a"))
	if err != nil {
		t.Fatal(err)
	}
	failing, err := node.NewVirtualMachine(ctx, 131, opt("scsi0", "local-lvm:4"))
	if err != nil {
		t.Fatal(err)
	}
	for _, vmid := range []int{130, 131} {
		if cur, _, ok := s.VMConfig(vmid); !ok || len(cur) != 1 || cur["lock"] != "create" {
			t.Fatalf("VM %d while held: %v %v", vmid, cur, ok)
		}
	}
	for _, ti := range s.Tasks() {
		if ti.Done {
			t.Fatalf("a held task ended: %+v", ti)
		}
	}
	s.ReleaseHeldTasks()
	waitOK(t, ctx, held)
	if exit := waitExit(t, ctx, failing); exit != "unable to create VM 131 - import failed" {
		t.Fatalf("held failing create: %q", exit)
	}
	if cur, _, _ := s.VMConfig(130); cur["lock"] != "" || cur["tags"] != "a" {
		t.Fatalf("VM 130 after its create: %v", cur)
	}
	if _, _, ok := s.VMConfig(131); ok {
		t.Fatal("the failed held create left its config")
	}
}

// A node-off task rule takes the task's node down in the middle of it.
func TestScriptNodeOffMidTask(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	ctx := ctxT(t)
	node, _ := c.Node(ctx, "pve2")
	s.SetFaults(Faults{Script: []FaultRule{{Task: "qmcreate", NodeOff: true, For: 200 * time.Millisecond}}})
	task, err := node.NewVirtualMachine(ctx, 120, opt("scsi0", "local-lvm:4"))
	if err != nil {
		t.Fatal(err)
	}
	if exit := waitNodeBack(t, s, string(task.UPID)); exit != "unexpected status" {
		t.Fatalf("create whose node went down: %q", exit)
	}
	if vms := s.VMs(); len(vms) != 1 || vms[0].Lock != "create" {
		t.Fatalf("VMs %+v", vms)
	}
}

// A power-off rule takes a node down after its delay for its duration;
// when the node is back, its onboot=1 VMs start again (in startup order),
// the others stay stopped, as pve-guests.service does on a real node.
func TestScriptPowerOffAndOnboot(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	ctx := ctxT(t)
	createStarted(t, ctx, c, 100, opt("onboot", 1), opt("startup", "order=2"))
	createStarted(t, ctx, c, 101)
	createStarted(t, ctx, c, 102, opt("onboot", 1), opt("startup", "order=1,up=0"))
	s.SetFaults(Faults{Script: []FaultRule{{PowerOff: "pve1", After: 50 * time.Millisecond, For: 300 * time.Millisecond}}})
	// the bound is a guard against hanging, not a speed check
	deadline := time.Now().Add(time.Minute)
	var down bool
	for time.Now().Before(deadline) {
		code, _ := rawCall(t, s, "GET", "/nodes/pve1/status", "", nil)
		if code == "595 No route to host" {
			down = true
		} else if down {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !down {
		t.Fatal("pve1 never went down (or stayed down for a minute: a hang guard)")
	}
	var status map[int]string
	for time.Now().Before(deadline) {
		status = map[int]string{}
		for _, vm := range s.VMs() {
			status[vm.VMID] = vm.Status
		}
		if status[100] == "running" && status[102] == "running" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if status[100] != "running" || status[102] != "running" || status[101] != "stopped" {
		t.Fatalf("after the node came back: %v (want 100 and 102 running, 101 stopped)", status)
	}
	var order []string
	for _, task := range s.Tasks() {
		if task.Type == "qmstart" && strings.HasSuffix(task.UPID, ":root@pam:") {
			order = append(order, task.ID)
		}
	}
	if strings.Join(order, ",") != "102,100" {
		t.Fatalf("onboot starts %v, want 102 then 100 (startup order)", order)
	}
	if st := s.FaultStrikes(); len(st) != 1 || st[0].What != "pve1" {
		t.Fatalf("strikes %+v", st)
	}
}

// A lost call runs, and the client still sees the error: what a proxy that
// fails on the way back does. Calls counts what reached the API.
func TestScriptLostAnswer(t *testing.T) {
	t.Parallel()
	s, c := startLab(t, Options{})
	ctx := ctxT(t)
	node, _ := c.Node(ctx, "pve1")
	s.SetFaults(Faults{Script: []FaultRule{{Call: "POST /nodes/{node}/qemu", Lost: true}}})
	_, err := node.NewVirtualMachine(ctx, 100, opt("cores", 1))
	mustContain(t, err, "500 lab fault injection")
	if err := s.WaitTasks(ctx); err != nil {
		t.Fatal(err)
	}
	if vms := s.VMs(); len(vms) != 1 || vms[0].VMID != 100 || vms[0].Lock != "" {
		t.Fatalf("the lost create did not run: %+v", vms)
	}
	if n := s.Calls("POST /nodes/{node}/qemu"); n != 1 {
		t.Fatalf("Calls = %d, want 1", n)
	}
}
