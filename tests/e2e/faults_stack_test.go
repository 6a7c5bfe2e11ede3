package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// faultStack is a YAML program with VMs of both kinds: four clones of the
// templates on pve1 (full) and pve2 (linked), and two VMs on pve3 booting
// an ISO that pve3 downloads; all with cloud-init addresses in the lab's
// block and the guest agent awaited.
func faultStack(prefix string) string {
	var b strings.Builder
	b.WriteString(`resources:
  iso:
    type: proxmoxtalos:proxmox:DownloadFile
    properties: {node: pve3, storage: local, url: "https://images.lab.example/lab-linux-agent.iso", fileName: lab-linux-agent.iso}
`)
	vm := func(name, node, source string, addr int) {
		fmt.Fprintf(&b, `  %s:
    type: proxmoxtalos:proxmox:VirtualMachine
    properties:
      node: %s
      name: %s
      cpu: {cores: 1}
      memory: {dedicated: 512}
%s      networkDevices: [{bridge: vmbr0}]
      cloudInit:
        storage: local-lvm
        ipConfigs: [{ipv4: {address: "%s.%d/24", gateway: "%s.1"}}]
      agent: {enabled: true, waitForAddress: true, timeout: 60}
`, name, node, name, source, prefix, addr, prefix)
	}
	vm("clone1", "pve1", "      clone: {vmId: 9000, full: true}\n", 21)
	vm("clone2", "pve1", "      clone: {vmId: 9000, full: true}\n", 22)
	vm("clone3", "pve1", "      clone: {vmId: 9000, full: true}\n", 23)
	vm("clone4", "pve2", "      clone: {vmId: 9001, full: false}\n", 24)
	isoVM := "      iso: ${iso.volumeId}\n      disks: [{interface: scsi0, storage: local-lvm, size: 4}]\n"
	vm("iso1", "pve3", isoVM, 31)
	vm("iso2", "pve3", isoVM, 32)
	return b.String()
}

// With faults on (lock timeouts, failed tasks, transient 500s, a slow guest
// agent, and pve3 restarting in the middle of a create), `up` of a stack of
// clones and ISO VMs either succeeds or fails with a clear error, and every
// VM and file it leaves in Proxmox is in the Pulumi state. With the faults
// off the next `up` converges without replacing anything that exists (after
// the one step Proxmox leaves to a person: clearing the lock of a create
// that died with its node, which an API token cannot do), a preview shows
// no change, and `destroy` leaves nothing but the templates.
func TestFaultsStackConverges(t *testing.T) {
	t.Parallel()
	env := harness.NewEnv(t)
	l, labConfig := harness.StartLab(t, lab.Options{Seed: 7101, Booter: pve.BasicBooter})
	makeTemplate(t, l, "pve1", 9000)
	makeTemplate(t, l, "pve2", 9001)
	p := harness.NewYAMLProject(t, env, "faults", faultStack(l.AddressPrefix()))
	p.ConfigureLab(t, labConfig)

	// Each `up` with faults must keep the invariant. The ISO VMs wait for
	// the download, which a fault may fail: `up` runs again (faults still
	// on) until pve3 has restarted in the middle of a create, at most 4
	// times. --continue-on-error: every resource is attempted whatever
	// fails first.
	l.SetFaults(pve.Faults{LockTimeoutRate: 0.15, TaskFailureRate: 0.05, ServerErrorRate: 0.02,
		AgentDelay: 1500 * time.Millisecond, NodeRestartOnTask: "qmcreate", NodeDowntime: 2 * time.Second})
	var before map[string]string
	for i := 1; ; i++ {
		up := p.Up(t, "--continue-on-error")
		t.Logf("up %d with faults: exit %d\n%s", i, up.ExitCode, up.Output())
		if up.ExitCode != 0 {
			out := up.Output()
			if strings.Contains(out, "panic:") || !strings.Contains(out, "error:") {
				t.Fatalf("up with faults failed without a clear error:\n%s", up)
			}
		}
		export := p.StackExport(t)
		requireAllKnown(t, l, export, fmt.Sprintf("after up %d with faults", i))
		before = stateIDs(t, export, vmType)
		if l.PVE.Faults().NodeRestartOnTask == "" {
			break
		}
		if i == 4 {
			t.Fatalf("no create ran in %d ups with faults: pve3 never restarted mid-create", i)
		}
	}

	l.SetFaults(pve.Faults{})
	up := p.Up(t)
	t.Logf("up without faults: exit %d\n%s", up.ExitCode, up.Output())
	if up.ExitCode != 0 {
		// The only failure left is the one Proxmox leaves to a person: a
		// create or clone that died with its node holds a lock no task
		// releases, and the error says what to run on the node.
		locked := lockedVMs(l)
		if len(locked) == 0 || !strings.Contains(up.Output(), "An API token cannot remove that lock") {
			t.Fatalf("up without faults failed, and not for a stale lock (locks: %v):\n%s", locked, up)
		}
		refresh := false
		for vmid, lock := range locked {
			switch lock {
			case "create": // `qm unlock <vmid>`: the next up finishes the VM
				if !strings.Contains(up.Output(), fmt.Sprintf("qm unlock %d", vmid)) {
					t.Errorf("the error does not tell to run `qm unlock %d`:\n%s", vmid, up)
				}
				if err := l.PVE.UnlockVM(vmid); err != nil {
					t.Fatal(err)
				}
			default: // `qm destroy <vmid> --skiplock ...`, refresh: the next up clones it again
				if err := l.DeleteVM(vmid); err != nil {
					t.Fatal(err)
				}
				refresh = true
			}
		}
		if refresh {
			if r := p.Refresh(t); r.ExitCode != 0 {
				t.Fatalf("refresh after clearing a stale clone: %s", r)
			}
		}
		if up = p.Up(t); up.ExitCode != 0 {
			t.Fatalf("up after clearing the stale locks: %s", up)
		}
	}
	converged := p.StackExport(t)
	requireAllKnown(t, l, converged, "after converging")
	after := stateIDs(t, converged, vmType)
	if len(after) != 6 || len(labVMIDs(l)) != 6 {
		t.Fatalf("converged state holds %d VMs and the lab %d (%v), want 6", len(after), len(labVMIDs(l)), labVMIDs(l))
	}
	for urn, id := range before {
		if now, ok := after[urn]; ok && now != id && slices.Contains(labVMIDs(l), id) {
			t.Errorf("%s was replaced: %s then %s", urn, id, now)
		}
	}
	if vms := l.VMs(); len(lockedVMs(l)) > 0 {
		t.Fatalf("VMs still locked after converging: %+v", vms)
	}
	for _, vm := range l.VMs() {
		if !vm.Template && vm.Status != "running" {
			t.Errorf("VM %d (%s) is %s after converging", vm.VMID, vm.Name, vm.Status)
		}
	}
	if r := p.Preview(t, "--expect-no-changes"); r.ExitCode != 0 {
		t.Errorf("preview after converging reports changes: %s", r)
	}

	if r := p.Destroy(t); r.ExitCode != 0 {
		t.Fatalf("destroy: %s", r)
	}
	if vms, isos := labVMIDs(l), labISOs(l); len(vms)+len(isos) > 0 {
		t.Fatalf("destroy left VMs %v and ISOs %v", vms, isos)
	}
	for _, node := range l.Nodes() {
		for _, v := range l.PVE.Volumes(node, "local-lvm") {
			if v.Owner != 9000 && v.Owner != 9001 {
				t.Errorf("destroy left volume %s (owner %d) on %s", v.VolID, v.Owner, node)
			}
		}
	}
}
