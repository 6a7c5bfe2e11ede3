package e2e

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// vmStatuses maps the lab's non-template VMs by name to their status.
func vmStatuses(l *lab.Lab) map[string]string {
	out := map[string]string{}
	for _, vm := range l.VMs() {
		if !vm.Template {
			out[vm.Name] = vm.Status
		}
	}
	return out
}

func vmidOf(t *testing.T, l *lab.Lab, name string) int {
	t.Helper()
	for _, vm := range l.VMs() {
		if vm.Name == name {
			return vm.VMID
		}
	}
	t.Fatalf("no VM %s in the lab: %+v", name, l.VMs())
	return 0
}

// requireExactlyState fails unless the lab's VMs are exactly the state's:
// no orphan, no VM the state names that is missing, no name twice.
func requireExactlyState(t *testing.T, l *lab.Lab, export, when string) {
	t.Helper()
	var state []string
	for _, id := range stateIDs(t, export, vmType) {
		state = append(state, id)
	}
	sort.Strings(state)
	if got := labVMIDs(l); strings.Join(got, " ") != strings.Join(state, " ") {
		t.Fatalf("%s: the lab holds VMs %v and the state %v", when, got, state)
	}
	names := map[string]int{}
	for _, vm := range l.VMs() {
		if names[vm.Name]++; names[vm.Name] > 1 && !vm.Template {
			t.Fatalf("%s: two VMs named %s: %+v", when, vm.Name, l.VMs())
		}
	}
}

// A VM that should run and does not (stopped or paused outside Pulumi, its
// host restarted) is started or resumed by the next `up`, without a refresh, and the
// preview says so per VM instead of reporting no changes. A start that
// failed during the create is repaired by the next `up` as well.
func TestFaultsStoppedVMsAreStartedWithoutRefresh(t *testing.T) {
	t.Parallel()
	env := harness.NewEnv(t)
	l, labConfig := harness.StartLab(t, lab.Options{NoTalos: true})
	p := harness.NewYAMLProject(t, env, "power", twoVMStack)
	p.ConfigureLab(t, labConfig)

	// the first start of vm1 or vm2 fails for a cause that stays
	l.SetFaults(pve.Faults{Script: []pve.FaultRule{{Task: "qmstart", Message: "start failed: QEMU exited with code 1"}}})
	if up := p.Up(t); up.ExitCode == 0 || !strings.Contains(up.Output(), "QEMU exited with code 1") {
		t.Fatalf("up whose first start fails: %s", up)
	}
	l.SetFaults(pve.Faults{})
	if up := p.Up(t); up.ExitCode != 0 {
		t.Fatalf("up after the failed start: %s", up)
	}
	if st := vmStatuses(l); st["vm1"] != "running" || st["vm2"] != "running" {
		t.Fatalf("after the repairing up: %v", st)
	}
	requireExactlyState(t, l, p.StackExport(t), "after the repairing up")

	// vm1 stopped outside Pulumi
	if err := l.PVE.StopVM(vmidOf(t, l, "vm1")); err != nil {
		t.Fatal(err)
	}
	pre := p.Preview(t, "--expect-no-changes")
	if pre.ExitCode == 0 || !strings.Contains(pre.Output(), fmt.Sprintf("VM vm1 (VM %d on node pve1) is stopped: it will be started", vmidOf(t, l, "vm1"))) {
		t.Fatalf("preview with vm1 stopped: %s", pre)
	}
	if strings.Contains(pre.Output(), "vm2 (VM") {
		t.Errorf("the running vm2 is reported too:\n%s", pre.Output())
	}
	if up := p.Up(t); up.ExitCode != 0 {
		t.Fatalf("up with vm1 stopped: %s", up)
	}
	if st := vmStatuses(l); st["vm1"] != "running" {
		t.Fatalf("vm1 after up: %v", st)
	}

	// vm2 paused outside Pulumi (Proxmox's "Pause"): qemu runs, the guest
	// does not; the preview says it and `up` resumes it
	if err := l.PVE.PauseVM(vmidOf(t, l, "vm2")); err != nil {
		t.Fatal(err)
	}
	pre = p.Preview(t, "--expect-no-changes")
	if pre.ExitCode == 0 || !strings.Contains(pre.Output(), fmt.Sprintf("VM vm2 (VM %d on node pve1) is paused: it will be resumed", vmidOf(t, l, "vm2"))) {
		t.Fatalf("preview with vm2 paused: %s", pre)
	}
	if up := p.Up(t); up.ExitCode != 0 {
		t.Fatalf("up with vm2 paused: %s", up)
	}
	if st := vmStatuses(l); st["vm2"] != "running" {
		t.Fatalf("vm2 after up: %v", st)
	}

	// the host restarted: both stop (no onboot)
	if err := l.PVE.RestartNode("pve1", 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	waitNodeOnline(t, l, "pve1")
	if up := p.Up(t); up.ExitCode != 0 {
		t.Fatalf("up after the host restart: %s", up)
	}
	if st := vmStatuses(l); st["vm1"] != "running" || st["vm2"] != "running" {
		t.Fatalf("after the host restart and up: %v", st)
	}
	if pre := p.Preview(t, "--expect-no-changes"); pre.ExitCode != 0 {
		t.Fatalf("preview after converging: %s", pre)
	}
	requireExactlyState(t, l, p.StackExport(t), "at the end")
}

// A VM deleted outside Pulumi shows in the preview as a VM to create again
// (a replacement, with the reason), and `up` recreates it without a
// refresh: the state then holds exactly the lab's VMs.
func TestFaultsDeletedVMIsRecreatedWithoutRefresh(t *testing.T) {
	t.Parallel()
	env := harness.NewEnv(t)
	l, labConfig := harness.StartLab(t, lab.Options{NoTalos: true})
	p := harness.NewYAMLProject(t, env, "deleted", twoVMStack)
	p.ConfigureLab(t, labConfig)
	if up := p.Up(t); up.ExitCode != 0 {
		t.Fatalf("up: %s", up)
	}
	gone := vmidOf(t, l, "vm2")
	if err := l.DeleteVM(gone); err != nil {
		t.Fatal(err)
	}
	pre := p.Preview(t)
	out := pre.Output()
	if pre.ExitCode != 0 || !strings.Contains(out, fmt.Sprintf("VM vm2 (VM %d on node pve1) no longer exists in Proxmox", gone)) ||
		!strings.Contains(out, "+-") || strings.Contains(out, "diff: ~iso") {
		t.Fatalf("preview with vm2 deleted: %s", pre)
	}
	if up := p.Up(t); up.ExitCode != 0 {
		t.Fatalf("up with vm2 deleted: %s", up)
	}
	if st := vmStatuses(l); st["vm1"] != "running" || st["vm2"] != "running" {
		t.Fatalf("after up: %v", st)
	}
	requireExactlyState(t, l, p.StackExport(t), "after recreating vm2")
	if pre := p.Preview(t, "--expect-no-changes"); pre.ExitCode != 0 {
		t.Fatalf("preview after recreating: %s", pre)
	}
}

func waitNodeOnline(t *testing.T, l *lab.Lab, node string) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if l.PVE.NodeOnline(node) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("node %s did not come back", node)
}

// twoNodeStack puts vm1 on pve1 and vm2 on pve2.
const twoNodeStack = `resources:
  vm1:
    type: proxmoxtalos:proxmox:VirtualMachine
    properties: {node: pve1, name: vm1, memory: {dedicated: 512}, disks: [{interface: scsi0, storage: local-lvm, size: 2}]}
  vm2:
    type: proxmoxtalos:proxmox:VirtualMachine
    properties: {node: pve2, name: vm2, memory: {dedicated: 512}, disks: [{interface: scsi0, storage: local-lvm, size: 2}]}
`

// With a Proxmox node down, a preview does not wait for it: it warns,
// naming the node and the VM it could not check, and shows that VM as
// changing rather than unchanged; a refresh keeps its state. The `up` that
// follows waits for the node to come back and starts the VM again. The
// node comes back when the up says it waits (not after a set time, which a
// loaded machine overruns).
func TestFaultsOfflineNodeAtPreview(t *testing.T) {
	t.Parallel()
	env := harness.NewEnv(t)
	l, labConfig := harness.StartLab(t, lab.Options{NoTalos: true})
	p := harness.NewYAMLProject(t, env, "offline", twoNodeStack)
	p.ConfigureLab(t, labConfig)
	if up := p.Up(t); up.ExitCode != 0 {
		t.Fatalf("up: %s", up)
	}
	vm2 := vmidOf(t, l, "vm2")
	if err := l.PVE.RestartNode("pve2", 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	pre := p.Preview(t)
	t.Logf("preview with pve2 down took %s", time.Since(start).Round(time.Millisecond))
	out := pre.Output()
	want := fmt.Sprintf("node pve2 is offline or does not answer: VM vm2 (VM %d on node pve2) could not be checked", vm2)
	if pre.ExitCode != 0 || !strings.Contains(out, want) || !strings.Contains(out, "vm2 update") ||
		strings.Contains(out, "vm1 update") {
		t.Fatalf("preview with pve2 down: %s", pre)
	}
	if r := p.Refresh(t); r.ExitCode != 0 || !strings.Contains(r.Output(), "was not refreshed") {
		t.Fatalf("refresh with pve2 down: %s", r)
	}
	requireExactlyState(t, l, p.StackExport(t), "after the refresh with pve2 down")
	run := p.Start(t, nil, "up", "--yes", "--skip-preview")
	waitFor(t, "the up to wait for pve2", 2400, func() bool { return strings.Contains(run.Output(), "node pve2 is offline: waiting") })
	if err := l.PVE.PowerOnNode("pve2"); err != nil {
		t.Fatal(err)
	}
	if up := run.Wait(t); up.ExitCode != 0 {
		t.Fatalf("up while pve2 comes back: %s", up)
	}
	if st := vmStatuses(l); st["vm1"] != "running" || st["vm2"] != "running" {
		t.Fatalf("after up: %v", st)
	}
	requireExactlyState(t, l, p.StackExport(t), "after up")
}
