package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// Issue 10 case 3: with 2 of 3 control planes and a worker stopped outside
// Pulumi (etcd has lost quorum), the preview says per node what the update
// does and what etcd has, and does not pass --expect-no-changes; `up`
// starts the VMs and reports success only once it saw the cluster healthy.
// When a VM cannot be started, `up` fails and says what etcd has.
func TestClusterUpOnABrokenCluster(t *testing.T) {
	t.Parallel()
	l, p := newTCCluster(t, 3, 2)

	stop := func(names ...string) {
		t.Helper()
		vms := l.vmsByName()
		for _, n := range names {
			if err := l.PVE.StopVM(vms[n].VMID); err != nil {
				t.Fatal(err)
			}
		}
	}
	down := []string{"e2e-cp-2", "e2e-cp-3", "e2e-workers-1"}
	stop(down...)

	pre := p.Preview(t, "--expect-no-changes")
	out := pre.Output()
	t.Logf("preview with %v stopped:\n%s", down, out)
	if pre.ExitCode == 0 {
		t.Errorf("preview --expect-no-changes passed with %v stopped", down)
	}
	vms := l.vmsByName()
	for _, n := range down {
		if want := fmt.Sprintf("%s: VM %d on %s stopped, will be started", n, vms[n].VMID, vms[n].Node); !strings.Contains(out, want) {
			t.Errorf("the preview does not say %q", want)
		}
	}
	quorum := "etcd: 1 of 3 control planes running (e2e-cp-2, e2e-cp-3 not), quorum lost"
	if !strings.Contains(out, quorum) {
		t.Errorf("the preview does not say %q", quorum)
	}
	if strings.Contains(out, "e2e-cp-1: VM") || strings.Contains(out, "e2e-workers-2: VM") {
		t.Errorf("the preview reports running nodes as stopped")
	}

	tcTimed(t, "up with 2 of 3 control planes and a worker stopped", func() harness.Result { return p.Up(t) })
	requireClusterRunning(t, l, p)

	// The same, but one host refuses to start VMs: the update cannot repair
	// the cluster, so it fails, and says what etcd has.
	stop("e2e-cp-2", "e2e-cp-3")
	vms = l.vmsByName()
	l.SetFaults(pve.Faults{Script: []pve.FaultRule{
		{Task: "qmstart", Node: vms["e2e-cp-3"].Node, Count: -1, Message: "start failed: QEMU exited with code 1"},
	}})
	up := p.Up(t)
	if up.ExitCode == 0 {
		t.Errorf("up succeeded although e2e-cp-3 cannot start:\n%s", up.Output())
	}
	for _, want := range []string{quorum, "QEMU exited with code 1"} {
		if !strings.Contains(up.Output(), want) {
			t.Errorf("the failed up does not say %q:\n%s", want, up.Output())
		}
	}
	l.SetFaults(pve.Faults{})
	tcTimed(t, "up once the host starts VMs again", func() harness.Result { return p.Up(t) })
	requireClusterRunning(t, l, p)

	// The lab recorded the deliberate losses; each ended, and none had a
	// member down besides those stopped here.
	for _, q := range l.Talos().QuorumLosses() {
		if q.Until.IsZero() || slices.ContainsFunc(q.Down, func(d string) bool { return d != "e2e-cp-2" && d != "e2e-cp-3" }) {
			t.Errorf("%s", q)
		}
	}
	tcTimed(t, "preview after the repair", func() harness.Result { return p.Preview(t, "--expect-no-changes") })
}

// requireClusterRunning: every VM runs, and Kubernetes sees every node of
// the stack's outputs, Ready.
func requireClusterRunning(t *testing.T, l *tcLab, p *harness.Project) {
	t.Helper()
	for name, vm := range l.vmsByName() {
		if vm.Status != "running" {
			t.Errorf("%s is %s after up", name, vm.Status)
		}
	}
	out := tcReadOutputs(t, p)
	var names []string
	for _, n := range out.Nodes {
		names = append(names, n.Name)
	}
	tcAssertKubeNodes(t, out.Kubeconfig, names...)
}
