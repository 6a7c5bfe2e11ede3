package e2e

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// Twenty VMs without a vmId in one `up --parallel 20`, while a fifth of all
// config lock acquisitions time out ("can't lock file ... got timeout"):
// the provider allocates twenty distinct VMIDs without racing itself,
// retries every lock timeout, and `up` succeeds; the state and the lab
// agree VM for VM, and `destroy` leaves the lab empty.
func TestParallel20VMsWithLockTimeouts(t *testing.T) {
	t.Parallel()
	env := harness.NewEnv(t)
	l, labConfig := harness.StartLab(t, lab.Options{Seed: 7202, Faults: pve.Faults{LockTimeoutRate: 0.2}})
	var b strings.Builder
	b.WriteString("resources:\n")
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&b, `  vm%02d:
    type: proxmoxtalos:proxmox:VirtualMachine
    properties:
      node: pve%d
      name: par-%02d
      memory: {dedicated: 512}
      disks: [{interface: scsi0, storage: local-lvm, size: 2}]
      networkDevices: [{bridge: vmbr0}]
`, i, 1+i%3, i)
	}
	p := harness.NewYAMLProject(t, env, "parallel", b.String())
	p.ConfigureLab(t, labConfig)

	up := p.Up(t, "--parallel", "20")
	if up.ExitCode != 0 {
		t.Fatalf("up of 20 VMs with lock timeouts: %s", up)
	}
	if !strings.Contains(up.Output(), "got timeout") || !strings.Contains(up.Output(), "retrying") {
		t.Errorf("no lock timeout was met and retried: the fault did not bite")
	}
	state := stateIDs(t, p.StackExport(t), vmType)
	var inState []string
	vmids := map[string]bool{}
	for _, id := range state {
		inState = append(inState, id)
		vmids[id[strings.Index(id, "/")+1:]] = true
	}
	sort.Strings(inState)
	if len(inState) != 20 || len(vmids) != 20 {
		t.Fatalf("the state holds %d VMs with %d distinct VMIDs, want 20: %v", len(inState), len(vmids), inState)
	}
	if inLab := labVMIDs(l); !reflect.DeepEqual(inLab, inState) {
		t.Fatalf("the lab's VMs differ from the state's:\nlab   %v\nstate %v", inLab, inState)
	}
	for _, vm := range l.VMs() {
		if vm.Status != "running" || vm.Lock != "" {
			t.Errorf("VM %d (%s) is %s with lock %q", vm.VMID, vm.Name, vm.Status, vm.Lock)
		}
	}

	if r := p.Destroy(t, "--parallel", "20"); r.ExitCode != 0 {
		t.Fatalf("destroy of 20 VMs with lock timeouts: %s", r)
	}
	if vms := l.VMs(); len(vms) != 0 {
		t.Fatalf("destroy left %d VMs: %+v", len(vms), vms)
	}
	for _, node := range l.Nodes() {
		if vols := l.PVE.Volumes(node, "local-lvm"); len(vols) != 0 {
			t.Errorf("destroy left volumes on %s: %+v", node, vols)
		}
	}
}
