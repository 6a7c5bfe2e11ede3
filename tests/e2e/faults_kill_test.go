package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	ppve "github.com/proxmoxtalos/proxmoxtalos/provider/pve"
	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// killPoints are the places of a create where the provider is killed (see
// provider/killpoint).
var killPoints = []string{"after-vmid-allocation", "after-create-task-started", "after-clone-task-started",
	"after-config", "after-start", "after-hand-over", "after-download-started"}

// killStack has both kinds of create (two clones of template 9000 and a VM
// made from nothing that boots an ISO the stack downloads), each VM with a
// static cloud-init address in the lab's block.
func killStack(prefix string) string {
	return fmt.Sprintf(`resources:
  iso:
    type: proxmoxtalos:proxmox:DownloadFile
    properties: {node: pve1, storage: local, url: "https://images.lab.example/lab-linux-agent.iso", fileName: lab-linux-agent.iso}
  clone1:
    type: proxmoxtalos:proxmox:VirtualMachine
    properties:
      node: pve1
      name: clone1
      clone: {vmId: 9000}
      cloudInit: {storage: local-lvm, ipConfigs: [{ipv4: {address: "%[1]s.21/24", gateway: "%[1]s.1"}}]}
  clone2:
    type: proxmoxtalos:proxmox:VirtualMachine
    properties:
      node: pve1
      name: clone2
      clone: {vmId: 9000}
      cloudInit: {storage: local-lvm, ipConfigs: [{ipv4: {address: "%[1]s.22/24", gateway: "%[1]s.1"}}]}
  plain1:
    type: proxmoxtalos:proxmox:VirtualMachine
    properties:
      node: pve1
      name: plain1
      iso: ${iso.volumeId}
      memory: {dedicated: 512}
      disks: [{interface: scsi0, storage: local-lvm, size: 2}]
      networkDevices: [{bridge: vmbr0}]
      cloudInit: {storage: local-lvm, ipConfigs: [{ipv4: {address: "%[1]s.23/24", gateway: "%[1]s.1"}}]}
`, prefix)
}

// requireConverged checks what a recovered stack must hold: exactly the
// VMs and ISOs the state names (no orphan, no duplicate), each VM once by
// name and address, all running and none half-made.
func requireConverged(t *testing.T, l *lab.Lab, export, when string) {
	t.Helper()
	requireExactlyState(t, l, export, when)
	if isos, state := labISOs(l), stateIDs(t, export, downloadType); len(isos) != 1 || len(state) != 1 {
		t.Fatalf("%s: ISOs %v in the lab, %v in the state", when, isos, state)
	}
	addrs := map[string]int{}
	n := 0
	for _, vm := range l.VMs() {
		if vm.Template {
			continue
		}
		n++
		cur, _, _ := l.VMConfig(vm.VMID)
		if addrs[cur["ipconfig0"]]++; addrs[cur["ipconfig0"]] > 1 {
			t.Fatalf("%s: two VMs on %s: %+v", when, cur["ipconfig0"], l.VMs())
		}
		if vm.Status != "running" || vm.Lock != "" || ppve.IsCreating(ppve.SplitTags(cur["tags"])) {
			t.Fatalf("%s: VM %d (%s) is %s, lock %q, tags %q", when, vm.VMID, vm.Name, vm.Status, vm.Lock, cur["tags"])
		}
	}
	if n != 3 {
		t.Fatalf("%s: %d VMs, want 3: %+v", when, n, l.VMs())
	}
}

// The provider killed at each point of a create (SIGKILL: no cleanup, no
// answer), then what Pulumi tells the user (`up` again, after a `refresh`
// for every other point): the stack ends with exactly its VMs and ISO, no
// duplicate, no orphan, no second VM on an address. A destroy killed while
// a VM is destroyed is finished by the next destroy, which leaves nothing.
func TestFaultsKillProviderDuringCreate(t *testing.T) {
	t.Parallel()
	l, labConfig := harness.StartLab(t, lab.Options{Booter: pve.BasicBooter})
	makeTemplate(t, l, "pve1", 9000)
	for i, point := range killPoints {
		env := harness.NewEnv(t)
		p := harness.NewYAMLProject(t, env, "kill"+strconv.Itoa(i), killStack(l.AddressPrefix()))
		p.ConfigureLab(t, labConfig)
		killed := p.RunWith(t, map[string]string{"PROXMOXTALOS_TEST_KILL_AT": point}, "up", "--yes", "--skip-preview")
		if killed.ExitCode == 0 || !strings.Contains(killed.Output(), "killpoint: PROXMOXTALOS_TEST_KILL_AT="+point) {
			t.Fatalf("%s: the provider was not killed: %s", point, killed)
		}
		requireAllKnownOrCreating(t, l, p.StackExport(t), point)
		if i%2 == 1 {
			if r := p.Refresh(t); r.ExitCode != 0 {
				t.Fatalf("%s: refresh after the kill: %s", point, r)
			}
		}
		if up := p.Up(t); up.ExitCode != 0 {
			t.Fatalf("%s: up after the kill: %s", point, up)
		}
		requireConverged(t, l, p.StackExport(t), "after killing the provider "+point)
		// destroy, killed while a VM is being destroyed, then again
		killed = p.RunWith(t, map[string]string{"PROXMOXTALOS_TEST_KILL_AT": "after-destroy-task-started"}, "destroy", "--yes")
		if killed.ExitCode == 0 {
			t.Fatalf("%s: the provider was not killed during destroy: %s", point, killed)
		}
		if r := p.Destroy(t); r.ExitCode != 0 {
			t.Fatalf("%s: destroy after the killed destroy: %s", point, r)
		}
		if vms, isos := labVMIDs(l), labISOs(l); len(vms)+len(isos) > 0 {
			t.Fatalf("%s: destroy left VMs %v and ISOs %v", point, vms, isos)
		}
	}
}

// requireAllKnownOrCreating: after a kill, every VM in the lab is in the
// state or carries its resource's identity for the next run to adopt.
func requireAllKnownOrCreating(t *testing.T, l *lab.Lab, export, when string) {
	t.Helper()
	known := map[string]bool{}
	for _, id := range stateIDs(t, export, vmType) {
		known[id] = true
	}
	for _, vm := range l.VMs() {
		if vm.Template || known[fmt.Sprintf("%s/%d", vm.Node, vm.VMID)] {
			continue
		}
		cur, _, _ := l.VMConfig(vm.VMID)
		if len(ppve.SystemTags(ppve.SplitTags(cur["tags"]))) == 0 && !strings.Contains(cur["description"], "proxmoxtalos-creating: ") &&
			vm.Lock != "clone" {
			t.Fatalf("%s: VM %d (%s) is neither in the state nor marked with its resource's identity: %v", when, vm.VMID, vm.Name, cur)
		}
	}
}

// The CLI killed (SIGKILL) while VMs are being created, then what Pulumi
// tells the user: `up` refuses (the stack is locked), `pulumi cancel`,
// and `up` (after a `refresh` the second time), which warns about the
// interrupted creates and ends with exactly the stack's VMs. The provider
// the killed CLI started does not outlive it for long.
func TestFaultsKillCLIDuringCreate(t *testing.T) {
	t.Parallel()
	l, labConfig := harness.StartLab(t, lab.Options{Booter: pve.BasicBooter, TimeScale: 0.3})
	makeTemplate(t, l, "pve1", 9000)
	for round, refresh := range []bool{false, true} {
		env := harness.NewEnv(t)
		env.KillSafe()
		p := harness.NewYAMLProject(t, env, "cli"+strconv.Itoa(round), killStack(l.AddressPrefix()))
		p.ConfigureLab(t, labConfig)
		run := p.Start(t, nil, "up", "--yes", "--skip-preview")
		waitFor(t, "a VM being cloned or created", 24000, func() bool {
			for _, vm := range l.VMs() {
				if vm.Lock == "clone" || vm.Lock == "create" {
					return true
				}
			}
			return false
		})
		if len(providerPIDs(t, env)) == 0 {
			t.Fatalf("round %d: no provider runs before the kill", round)
		}
		run.Kill(t)
		run.Wait(t)
		start := time.Now()
		// a liveness bound, not a speed check: Pulumi's own health check
		// would end the provider only after five minutes
		waitFor(t, "the killed CLI's provider to exit", 2400, func() bool { return len(providerPIDs(t, env)) == 0 })
		t.Logf("round %d: the provider exited %s after the CLI was killed", round, time.Since(start).Round(100*time.Millisecond))

		if up := p.Up(t); up.ExitCode == 0 || !strings.Contains(up.Output(), "pulumi cancel") {
			t.Fatalf("up on the stack the killed CLI left locked: %s", up)
		}
		if r := p.Run(t, "cancel", "--yes"); r.ExitCode != 0 {
			t.Fatalf("cancel: %s", r)
		}
		if refresh {
			if r := p.Refresh(t); r.ExitCode != 0 {
				t.Fatalf("refresh after cancel: %s", r)
			}
		}
		up := p.Up(t)
		if up.ExitCode != 0 {
			t.Fatalf("up after cancel: %s", up)
		}
		if !refresh && !strings.Contains(up.Output(), "interrupted while creating") {
			t.Errorf("up does not report the interrupted creates:\n%s", up.Output())
		}
		requireConverged(t, l, p.StackExport(t), fmt.Sprintf("round %d after killing the CLI", round))
		if r := p.Destroy(t); r.ExitCode != 0 {
			t.Fatalf("destroy: %s", r)
		}
		if vms, isos := labVMIDs(l), labISOs(l); len(vms)+len(isos) > 0 {
			t.Fatalf("round %d: destroy left VMs %v and ISOs %v", round, vms, isos)
		}
	}
}

// waitFor polls cond every 50 ms, at most tries times.
func waitFor(t *testing.T, what string, tries int, cond func() bool) {
	t.Helper()
	for i := 0; i < tries; i++ {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("gave up waiting for %s", what)
}

// providerPIDs lists the running provider processes of env (by their
// PULUMI_HOME), however their parent ended.
func providerPIDs(t *testing.T, env *harness.Env) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || filepath.Base(exe) != harness.BinaryName {
			continue
		}
		environ, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && strings.Contains(string(environ), "PULUMI_HOME="+env.Home+"\x00") {
			out = append(out, pid)
		}
	}
	return out
}
