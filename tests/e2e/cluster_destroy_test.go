package e2e

import (
	"fmt"
	"regexp"
	"slices"
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
	l, p := newTCCluster(t, 3, 2)
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
	requireDestroyedAroundGoneNodes(t, l, out, d, "e2e-cp-2", "e2e-workers-1", "e2e-workers-2")
	if !strings.Contains(d.Output(), "etcd member e2e-cp-2 ("+nodeAddress(t, out, "e2e-cp-2")+") does not answer: it was removed from etcd so that node e2e-cp-3") {
		t.Errorf("destroy does not say e2e-cp-2's member was removed for e2e-cp-3 to leave")
	}
}

// The same from the CLI with a control plane's VM deleted in Proxmox (as
// in the web UI) and a worker stopped: destroy finishes and warns naming
// both; the gone control plane's etcd member is removed through a live
// control plane before the first control plane leaves etcd (the order the
// product documents: workers first, then control planes from the last,
// each leaving gracefully, the head reset last); no VM is left.
func TestClusterDestroyWithAControlPlaneDeleted(t *testing.T) {
	t.Parallel()
	l, p := newTCCluster(t, 3, 1)
	out := tcReadOutputs(t, p)
	vms := l.vmsByName()
	gone := memberID(t, etcdMembers(t, l, out, "e2e-cp-1"), "e2e-cp-2")
	deleteInProxmox(t, l, vms["e2e-cp-2"])
	if err := l.PVE.StopVM(vms["e2e-workers-1"].VMID); err != nil {
		t.Fatal(err)
	}

	d := p.Destroy(t)
	requireDestroyedAroundGoneNodes(t, l, out, d, "e2e-cp-2", "e2e-workers-1")
	if !strings.Contains(d.Output(), "etcd member e2e-cp-2 ("+nodeAddress(t, out, "e2e-cp-2")+") does not answer: it was removed from etcd so that node e2e-cp-3") {
		t.Errorf("destroy does not say e2e-cp-2's member was removed for e2e-cp-3 to leave")
	}

	// In the lab's log: the gone member removed (through a live control
	// plane), then e2e-cp-3 leaving etcd, then the control planes' VMs
	// destroyed.
	events := l.logLines(regexp.MustCompile(fmt.Sprintf(`etcd member %x removed|left the etcd cluster|:qmdestroy:`, gone)))
	removed := slices.IndexFunc(events, func(e string) bool { return strings.Contains(e, fmt.Sprintf("etcd member %x removed", gone)) })
	left := slices.IndexFunc(events, func(e string) bool {
		return strings.Contains(e, "left the etcd cluster") && strings.Contains(e, "vm=e2e-cp-3")
	})
	destroyed := slices.IndexFunc(events, func(e string) bool { return strings.Contains(e, ":qmdestroy:"+fmt.Sprint(vms["e2e-cp-3"].VMID)+":") })
	if removed < 0 || left < 0 || destroyed < 0 || !(removed < left && left < destroyed) {
		t.Errorf("want e2e-cp-2's member (%x) removed, then e2e-cp-3 leaving etcd, then e2e-cp-3's VM destroyed; the lab logged:\n%s", gone, tcJoin(events))
	}
}

// requireDestroyedAroundGoneNodes checks a destroy of a cluster some of
// whose nodes were stopped or deleted outside Pulumi: it finished, warned
// that each of those nodes is not reset, advised no input a TalosCluster
// user does not have, left no VM, and etcd never lost quorum.
func requireDestroyedAroundGoneNodes(t *testing.T, l *tcLab, out tcOutputs, d harness.Result, gone ...string) {
	t.Helper()
	t.Logf("destroy:\n%s", d.Output())
	if d.ExitCode != 0 {
		t.Fatalf("destroy with %v stopped or deleted failed:\n%s", gone, d)
	}
	for _, name := range gone {
		want := "node " + name + " (" + nodeAddress(t, out, name) + ") does not answer on the Talos API (its VM is stopped, deleted or unreachable): it is not reset"
		if !strings.Contains(d.Output(), want) {
			t.Errorf("destroy does not warn %q", want)
		}
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
