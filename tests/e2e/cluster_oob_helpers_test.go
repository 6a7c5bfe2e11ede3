package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos"
)

// Helpers of the issue-10 tests that break a running cluster outside
// Pulumi and check what the stack makes of it.

// newTCCluster starts a lab and creates the e2e cluster with cps control
// planes and workers workers in it.
func newTCCluster(t *testing.T, cps, workers int) (*tcLab, *harness.Project) {
	t.Helper()
	l := startTCLab(t)
	p := harness.NewYAMLProject(t, harness.NewEnv(t), "cluster", l.program(cps, workers).render(t))
	p.ConfigureLab(t, l.conn)
	tcTimed(t, fmt.Sprintf("create %d+%d", cps, workers), func() harness.Result { return p.Up(t) })
	return l, p
}

// deleteInProxmox deletes a VM through the lab's Proxmox API as a person
// does in the Proxmox web UI: Stop (PVE refuses to destroy a running VM),
// then Remove with its two boxes ticked (purge from job configurations,
// destroy unreferenced disks).
func deleteInProxmox(t *testing.T, l *tcLab, vm pve.VMInfo) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := adminClient(t, l.Lab).Node(ctx, vm.Node)
	if err != nil {
		t.Fatal(err)
	}
	v, err := n.VirtualMachine(ctx, vm.VMID)
	if err != nil {
		t.Fatal(err)
	}
	task, err := v.Stop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitTaskOK(ctx, t, task, fmt.Sprintf("stopping VM %d (%s)", vm.VMID, vm.Name))
	task, err = v.Delete(ctx, &proxmox.VirtualMachineDeleteOptions{Purge: true, DestroyUnreferencedDisks: true})
	if err != nil {
		t.Fatal(err)
	}
	waitTaskOK(ctx, t, task, fmt.Sprintf("deleting VM %d (%s)", vm.VMID, vm.Name))
	if _, ok := l.vmsByName()[vm.Name]; ok {
		t.Fatalf("VM %s is still in the lab after its delete", vm.Name)
	}
}

// etcdMembers lists the cluster's etcd members as the named control plane
// sees them (the lab's etcd, as `talosctl etcd members` shows it).
func etcdMembers(t *testing.T, l *tcLab, out tcOutputs, via string) []talos.EtcdMemberInfo {
	t.Helper()
	n := l.Talos().Node(netip.MustParseAddr(nodeAddress(t, out, via)))
	if n == nil {
		t.Fatalf("no Talos node %s in the lab", via)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ms, err := n.Etcd().Members(ctx, false)
	if err != nil {
		t.Fatalf("etcd members through %s: %v", via, err)
	}
	return ms
}

// memberID is the named control plane's etcd member ID.
func memberID(t *testing.T, members []talos.EtcdMemberInfo, name string) uint64 {
	t.Helper()
	i := slices.IndexFunc(members, func(m talos.EtcdMemberInfo) bool { return m.Name == name })
	if i < 0 {
		t.Fatalf("no etcd member %s in %+v", name, members)
	}
	return members[i].ID
}

// requireEtcdMembers: etcd has exactly the cluster's control planes as
// voting members, each answering its status without errors, and none of
// them is a member ID in gone.
func requireEtcdMembers(t *testing.T, l *tcLab, out tcOutputs, gone ...uint64) {
	t.Helper()
	var cps, names []string
	for _, n := range out.Nodes {
		if n.Role == "controlplane" {
			cps = append(cps, n.Name)
		}
	}
	members := etcdMembers(t, l, out, cps[0])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, m := range members {
		names = append(names, m.Name)
		if slices.Contains(gone, m.ID) {
			t.Errorf("etcd still has the removed member %x (%s)", m.ID, m.Name)
		}
		if m.IsLearner {
			t.Errorf("etcd member %s is a learner", m.Name)
		}
		if !slices.Contains(cps, m.Name) {
			continue
		}
		st, err := l.Talos().Node(netip.MustParseAddr(nodeAddress(t, out, m.Name))).Etcd().Status(ctx)
		if err != nil || len(st.Errors) > 0 || st.MemberID != m.ID {
			t.Errorf("etcd member %s (%x): status %+v, %v", m.Name, m.ID, st, err)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, cps) {
		t.Errorf("etcd members %v, want the control planes %v", names, cps)
	}
}

// requireNoStrays checks the lab against the stack with the soak's
// accounting: no VM the state does not know, no VMID the state holds
// twice, no name or address two VMs share.
func requireNoStrays(t *testing.T, l *tcLab, p *harness.Project, when string) {
	t.Helper()
	var r soakRun
	r.count(t, l, p, false)
	if r.orphans+r.dupVMIDs+r.dupVMs+r.dupAddrs > 0 {
		t.Errorf("%s: orphans %d, VMIDs twice in the state %d, VM names twice %d, addresses twice %d; VMs %+v",
			when, r.orphans, r.dupVMIDs, r.dupVMs, r.dupAddrs, l.VMs())
	}
}
