package e2e

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos"
)

// Issue 10, soak seed 9103: a node's VM stops in the middle of its Talos
// upgrade (there its host lost power and the start when it came back
// failed). The upgrade's wait asks Proxmox, sees the VM stopped and fails
// with the node, the VM and what to do, instead of waiting for the
// resource's 10-minute timeout; the next `up` starts the VM and finishes
// the upgrade.
func TestClusterVMStoppedDuringUpgrade(t *testing.T) {
	t.Parallel()
	l := startTCLab(t)
	env := harness.NewEnv(t)
	prog := l.program(1, 1)
	p := harness.NewYAMLProject(t, env, "cluster", prog.render(t))
	p.ConfigureLab(t, l.conn)
	tcTimed(t, "create", func() harness.Result { return p.Up(t) })
	out := tcReadOutputs(t, p)
	cp := out.Nodes[0]

	// The first upgrade (the control plane's) is cut by its VM stopping.
	l.Talos().SetFaults(talos.Faults{StopInUpgrade: 1})
	prog.TalosVersion = "v1.12.6"
	p.WriteProgram(t, "cluster", prog.render(t))
	up := p.Up(t)
	if up.ExitCode == 0 {
		t.Fatalf("up with the VM stopped in its upgrade succeeded:\n%s", up.Output())
	}
	if st := l.vmsByName()[cp.Name].Status; st != "stopped" {
		t.Fatalf("%s's VM after the cut upgrade is %s, want stopped (the fault did not strike?)\n%s", cp.Name, st, up.Output())
	}
	// What stopped the wait: the VM's state, not the timeout.
	for _, want := range []string{
		fmt.Sprintf("node %s does not answer: its machine, VM %d on Proxmox node %s, is stopped", cp.Address, cp.VMID, cp.ProxmoxNode),
		"The next `pulumi up` starts it",
	} {
		if !strings.Contains(up.Output(), want) {
			t.Errorf("the failed up does not say %q:\n%s", want, up.Output())
		}
	}
	t.Logf("the failed up:\n%s", errorLines(up.Output()))
	if strings.Contains(up.Output(), "timed out after") {
		t.Errorf("the failed up says a wait timed out:\n%s", up.Output())
	}

	// The next up starts the VM (the node boots the old version) and
	// upgrades it again.
	l.Talos().SetFaults(talos.Faults{})
	tcTimed(t, "up after the VM stopped", func() harness.Result { return p.Up(t) })
	for name, vm := range l.vmsByName() {
		if vm.Status != "running" {
			t.Errorf("%s is %s after the repairing up", name, vm.Status)
		}
	}
	for _, n := range out.Nodes {
		node := l.Talos().Node(netip.MustParseAddr(n.Address))
		if node == nil || node.Status().Image.Version != "v1.12.6" {
			t.Errorf("%s is not on Talos v1.12.6 after the repairing up", n.Name)
		}
	}
	tcTimed(t, "preview after the repair", func() harness.Result { return p.Preview(t, "--expect-no-changes") })
}
