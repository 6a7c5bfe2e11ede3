package e2e

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// Issue 10 case 2: a control plane whose VM failed to start during the
// create is repaired by the next `up`, without a refresh and without a
// person starting it in Proxmox. Its VM step must not wait on anything that
// needs the node (the previous node's apply, the component stages).
func TestClusterStartFailureHeals(t *testing.T) {
	t.Parallel()
	// QEMU that cannot start is a failure Proxmox keeps (never retried):
	// the first up fails there.
	l := startTCLabWith(t, lab.Options{Faults: pve.Faults{Script: []pve.FaultRule{
		{Task: "qmstart", Node: "pve3", Message: "start failed: QEMU exited with code 1"},
	}}})
	env := harness.NewEnv(t)
	prog := l.program(3, 1)
	p := harness.NewYAMLProject(t, env, "cluster", prog.render(t))
	p.ConfigureLab(t, l.conn)

	first := p.Up(t)
	if first.ExitCode == 0 {
		t.Fatalf("up with a failing VM start succeeded:\n%s", first.Output())
	}
	var stopped []string
	for name, vm := range l.vmsByName() {
		if vm.Status != "running" {
			stopped = append(stopped, name)
		}
	}
	// A later control plane: its VM step used to wait for the previous
	// node's apply, which waited for the stages, whose reads needed it.
	if len(stopped) != 1 || (stopped[0] != "e2e-cp-2" && stopped[0] != "e2e-cp-3") {
		t.Fatalf("VMs not running after the failed start: %v, want one later control plane (strikes %v)\n%s", stopped, l.PVE.FaultStrikes(), first.Output())
	}
	down := stopped[0]
	t.Logf("first up failed with %s's VM stopped", down)

	l.SetFaults(pve.Faults{})
	pre := tcTimed(t, "preview of the repair", func() harness.Result { return p.Preview(t) })
	if !strings.Contains(pre.Output(), "1 started first (VM stopped): "+down) {
		t.Errorf("the preview does not say the stopped VM is started:\n%s", pre.Output())
	}
	up := tcTimed(t, "up after the failed start", func() harness.Result { return p.Up(t) })
	for name, vm := range l.vmsByName() {
		if vm.Status != "running" {
			t.Errorf("%s is %s after the repair", name, vm.Status)
		}
	}
	out := tcReadOutputs(t, p)
	tcAssertKubeNodes(t, out.Kubeconfig, "e2e-cp-1", "e2e-cp-2", "e2e-cp-3", "e2e-workers-1")
	if n := l.Talos().Node(netip.MustParseAddr(nodeAddress(t, out, down))); n == nil || !n.Status().EtcdMember {
		t.Errorf("%s is not an etcd member after the repair:\n%s", down, up.Output())
	}
	if q := l.Talos().QuorumLosses(); len(q) > 0 {
		t.Errorf("etcd lost quorum: %v", q)
	}
	tcTimed(t, "preview after the repair", func() harness.Result { return p.Preview(t, "--expect-no-changes") })
}

// nodeAddress is the named node's address in the component's outputs.
func nodeAddress(t *testing.T, out tcOutputs, name string) string {
	t.Helper()
	i := slices.IndexFunc(out.Nodes, func(n tcNode) bool { return n.Name == name })
	if i < 0 {
		t.Fatalf("no node %s in the outputs: %+v", name, out.Nodes)
	}
	return out.Nodes[i].Address
}

// waitUntil polls cond (at most a minute, bounded in count) for what the
// lab does on its own after a test step.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 600 {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}
