package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
)

// Review 2026-11-29 01:15 item 5, end to end: a worker's VM deleted
// outside Pulumi, then a refresh of it, which removes the VM from the
// stack's state (VirtualMachine's Read finds it gone) and leaves the
// worker's ConfigurationApply. With every
// control plane paused, the cluster's members cannot be read, and the
// stack's state decides: the worker is there by its apply, so the preview
// creates it again at its address instead of adding it (before: "1 added",
// with a warning that it "never had one").
func TestClusterDeletedVMAfterARefreshWithMembersUnread(t *testing.T) {
	t.Parallel()
	l, p := newTCCluster(t, 3, 1)
	out := tcReadOutputs(t, p)
	vms := l.vmsByName()
	if err := l.DeleteVM(vms["e2e-workers-1"].VMID); err != nil {
		t.Fatal(err)
	}
	// The worker's VM and apply are refreshed. ConfigurationApply's Read
	// keeps the state of a node it cannot reach (provider/talos
	// configuration_apply_read.go), with a warning; Proxmox says the VM is
	// gone, so it does not wait its minute for the node (before: 2m0.6s
	// for this refresh, the minute in its preview and in the refresh, and
	// the warning was lost).
	const under = "urn:pulumi:test::cluster::proxmoxtalos:index:TalosCluster$"
	ref := tcTimed(t, "refresh of the worker's VM and apply", func() harness.Result {
		return p.Refresh(t, "--target", under+"proxmoxtalos:proxmox:VirtualMachine::e2e-workers-1",
			"--target", under+"proxmoxtalos:talos:ConfigurationApply::e2e-workers-1")
	})
	if want := fmt.Sprintf("node %s could not be read, its state is kept: node %[1]s does not answer: its machine, VM %d, no longer exists",
		nodeAddress(t, out, "e2e-workers-1"), vms["e2e-workers-1"].VMID); !strings.Contains(ref.Output(), want) {
		t.Errorf("the refresh does not say %q:\n%s", want, ref.Output())
	}
	state := p.StackExport(t)
	if strings.Contains(state, "VirtualMachine::e2e-workers-1") || !strings.Contains(state, "ConfigurationApply::e2e-workers-1") {
		t.Fatalf("after the refresh the state does not hold the worker's apply without its VM")
	}
	for _, cp := range []string{"e2e-cp-1", "e2e-cp-2", "e2e-cp-3"} {
		if err := l.PVE.PauseVM(vms[cp].VMID); err != nil {
			t.Fatal(err)
		}
	}

	pre := p.Preview(t, "--diff")
	t.Logf("preview:\n%s", pre.Output())
	for _, want := range []string{
		fmt.Sprintf("e2e-workers-1: VM missing (deleted outside Pulumi), will be created again at %s and rejoin the cluster", nodeAddress(t, out, "e2e-workers-1")),
		"the cluster's members could not be read (no control plane answered): whether a node without a VM had one is " +
			"taken from the stack's state instead: e2e-workers-1 had one (created again)",
		"1 created again (VM deleted outside Pulumi): e2e-workers-1",
	} {
		if !strings.Contains(pre.Output(), want) {
			t.Errorf("the preview does not say %q", want)
		}
	}
	if strings.Contains(pre.Output(), "added") {
		t.Errorf("the preview adds a node")
	}
}
