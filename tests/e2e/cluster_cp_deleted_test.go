package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
)

// Issue 10 case 6 for a control plane: on a healthy 3+1 cluster, e2e-cp-2's
// VM is deleted in Proxmox (stopped, then removed, as in the web UI). The
// preview shows the node as one to add back (its VM created again, not
// updated in place, and --expect-no-changes fails); `up`, without a
// refresh, creates the VM again, the node rejoins, the old etcd member is
// gone (etcd has the three control planes, each healthy), the other VMs
// keep their VMIDs, nothing is left over or doubled, and then nothing is
// left to do.
func TestClusterControlPlaneDeletedOutOfBand(t *testing.T) {
	t.Parallel()
	l, p := newTCCluster(t, 3, 1)
	out := tcReadOutputs(t, p)
	before := l.vmsByName()
	oldMember := memberID(t, etcdMembers(t, l, out, "e2e-cp-1"), "e2e-cp-2")
	deleteInProxmox(t, l, before["e2e-cp-2"])

	pre := p.Preview(t, "--expect-no-changes", "--diff")
	t.Logf("preview:\n%s", pre.Output())
	if pre.ExitCode == 0 {
		t.Errorf("preview --expect-no-changes passed with a control plane's VM deleted")
	}
	want := fmt.Sprintf("e2e-cp-2: VM missing (deleted outside Pulumi), will be created again at %s and rejoin the cluster", nodeAddress(t, out, "e2e-cp-2"))
	if !strings.Contains(pre.Output(), want) {
		t.Errorf("the preview does not say %q", want)
	}
	if strings.Contains(pre.Output(), "[diff: ~iso]") {
		t.Errorf("the deleted VM shows as an in-place update of its ISO")
	}
	if !regexp.MustCompile(`\+-proxmoxtalos:proxmox:VirtualMachine: \(replace\)\n\s+\[id=[^\]]+\]\n\s+\[urn=[^\]]*VirtualMachine::e2e-cp-2\]`).MatchString(pre.Output()) {
		t.Errorf("the preview does not show e2e-cp-2's VM as created again (replaced)")
	}
	if !strings.Contains(pre.Output(), "1 created again (VM deleted outside Pulumi): e2e-cp-2") {
		t.Errorf("the preview's summary does not say e2e-cp-2 is created again")
	}

	tcTimed(t, "up with a control plane's VM deleted", func() harness.Result { return p.Up(t) })
	after := l.vmsByName()
	if len(after) != 4 {
		t.Errorf("after up the lab holds %d VMs: %+v", len(after), after)
	}
	for name, vm := range before {
		if name != "e2e-cp-2" && after[name].VMID != vm.VMID {
			t.Errorf("%s's VM changed from %d to %d", name, vm.VMID, after[name].VMID)
		}
	}
	requireClusterRunning(t, l, p)
	out = tcReadOutputs(t, p)
	requireEtcdMembers(t, l, out, oldMember)
	requireNoStrays(t, l, p, "after the repair")
	if q := l.Talos().QuorumLosses(); len(q) > 0 {
		t.Errorf("etcd lost quorum: %v", q)
	}
	tcTimed(t, "preview after the repair", func() harness.Result { return p.Preview(t, "--expect-no-changes") })
}
