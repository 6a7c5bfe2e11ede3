package e2e

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
)

// Issue 10 case 6, and a paused VM: a worker's VM deleted outside Pulumi
// and a control plane's VM paused in Proxmox. The preview says per node
// that the worker is created again at its address (not an in-place update
// of its ISO) and that the control plane is resumed, and does not pass
// --expect-no-changes; `up`, without a refresh, recreates the worker,
// which rejoins, and resumes the control plane; then nothing is left to do.
func TestClusterVMsDeletedOrPausedOutOfBand(t *testing.T) {
	t.Parallel()
	l, p := newTCCluster(t, 3, 1)
	out := tcReadOutputs(t, p)

	vms := l.vmsByName()
	gone, paused := vms["e2e-workers-1"], vms["e2e-cp-2"]
	if err := l.DeleteVM(gone.VMID); err != nil {
		t.Fatal(err)
	}
	if err := l.PVE.PauseVM(paused.VMID); err != nil {
		t.Fatal(err)
	}

	pre := p.Preview(t, "--expect-no-changes", "--diff")
	t.Logf("preview:\n%s", pre.Output())
	if pre.ExitCode == 0 {
		t.Errorf("preview --expect-no-changes passed with a VM deleted and one paused")
	}
	for _, want := range []string{
		fmt.Sprintf("e2e-workers-1: VM missing (deleted outside Pulumi), will be created again at %s and rejoin the cluster", nodeAddress(t, out, "e2e-workers-1")),
		fmt.Sprintf("e2e-cp-2: VM %d on %s paused, will be resumed", paused.VMID, paused.Node),
		"1 resumed first (VM paused): e2e-cp-2",
	} {
		if !strings.Contains(pre.Output(), want) {
			t.Errorf("the preview does not say %q", want)
		}
	}
	if strings.Contains(pre.Output(), "[diff: ~iso]") {
		t.Errorf("the deleted VM shows as an in-place update of its ISO")
	}

	tcTimed(t, "up with a VM deleted and one paused", func() harness.Result { return p.Up(t) })
	after := l.vmsByName()
	if len(after) != 4 {
		t.Errorf("after up the lab holds %d VMs: %+v", len(after), after)
	}
	for name, vm := range after {
		if vm.Status != "running" {
			t.Errorf("%s is %s after up", name, vm.Status)
		}
	}
	out = tcReadOutputs(t, p)
	tcAssertKubeNodes(t, out.Kubeconfig, "e2e-cp-1", "e2e-cp-2", "e2e-cp-3", "e2e-workers-1")
	if n := l.Talos().Node(netip.MustParseAddr(nodeAddress(t, out, "e2e-cp-2"))); n == nil || !n.Status().EtcdMember {
		t.Errorf("the resumed e2e-cp-2 is not an etcd member")
	}
	if q := l.Talos().QuorumLosses(); len(q) > 0 {
		t.Errorf("etcd lost quorum: %v", q)
	}
	tcTimed(t, "preview after the repair", func() harness.Result { return p.Preview(t, "--expect-no-changes") })
}
