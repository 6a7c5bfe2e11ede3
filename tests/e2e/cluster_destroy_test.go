package e2e

import (
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
)

// Issue 10 case 4: destroy finishes when nodes are stopped or deleted
// outside Pulumi. Each of them is skipped for reset with a warning naming
// it; the stopped control plane's etcd member is removed through a live one
// (first by the control plane that leaves before it, which etcd would
// refuse otherwise); no error advises an input a TalosCluster user does not
// have; the lab is left empty, and etcd never lost quorum.
func TestClusterDestroyWithNodesGone(t *testing.T) {
	t.Parallel()
	l := startTCLab(t)
	env := harness.NewEnv(t)
	p := harness.NewYAMLProject(t, env, "cluster", l.program(3, 2).render(t))
	p.ConfigureLab(t, l.conn)
	tcTimed(t, "create 3+2", func() harness.Result { return p.Up(t) })
	out := tcReadOutputs(t, p)

	vms := l.vmsByName()
	for _, name := range []string{"e2e-cp-2", "e2e-workers-1"} {
		if err := l.PVE.StopVM(vms[name].VMID); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.DeleteVM(vms["e2e-workers-2"].VMID); err != nil {
		t.Fatal(err)
	}

	d := p.Destroy(t)
	t.Logf("destroy:\n%s", d.Output())
	if d.ExitCode != 0 {
		t.Fatalf("destroy with nodes stopped and deleted failed:\n%s", d)
	}
	for _, name := range []string{"e2e-cp-2", "e2e-workers-1", "e2e-workers-2"} {
		want := "node " + name + " (" + nodeAddress(t, out, name) + ") does not answer on the Talos API (its VM is stopped, deleted or unreachable): it is not reset"
		if !strings.Contains(d.Output(), want) {
			t.Errorf("destroy does not warn %q", want)
		}
	}
	if !strings.Contains(d.Output(), "etcd member e2e-cp-2 ("+nodeAddress(t, out, "e2e-cp-2")+") does not answer: it was removed from etcd so that node e2e-cp-3") {
		t.Errorf("destroy does not say e2e-cp-2's member was removed for e2e-cp-3 to leave")
	}
	if strings.Contains(d.Output(), "change reset") {
		t.Errorf("destroy advises an input a TalosCluster user does not have")
	}
	if vms := l.VMs(); len(vms) != 0 {
		t.Errorf("destroy left VMs: %+v", vms)
	}
	if q := l.Talos().QuorumLosses(); len(q) > 0 {
		t.Errorf("etcd lost quorum: %v", q)
	}
}
