package e2e

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
)

// A new hosts[].diskStorage moves each node's OS disk live, one node after
// the other, and each node's ConfigurationApply checks the cluster's
// health after its VM's move: the next node's VM, which waits for that
// apply, moves only then. A larger size.diskSize grows the OS disks the
// same way. No VM restarts.
func TestClusterDiskStorageMoveIsGated(t *testing.T) {
	t.Parallel()
	var nodes []pve.NodeSpec
	for _, name := range []string{"pve1", "pve2", "pve3"} {
		n := pve.DefaultNode(name)
		n.Storages = append(n.Storages, pve.StorageSpec{ID: "fast", Type: "lvmthin", Content: []string{"images", "rootdir"}, SizeGiB: 500})
		nodes = append(nodes, n)
	}
	l := startTCLabWith(t, lab.Options{Nodes: nodes})
	env := harness.NewEnv(t)
	prog := l.program(1, 1)
	p := harness.NewYAMLProject(t, env, "cluster", prog.render(t))
	p.ConfigureLab(t, l.conn)

	tcTimed(t, "create 1+1", func() harness.Result { return p.Up(t) })
	out := tcReadOutputs(t, p)
	if len(out.Nodes) != 2 {
		t.Fatalf("nodes %+v", out.Nodes)
	}

	prog.DiskStorage = "fast"
	p.WriteProgram(t, "cluster", prog.render(t))
	seen := len(l.restarts(0, out.Nodes))
	up := tcTimed(t, "move the disks", func() harness.Result { return p.Up(t) })
	tcAssertSummary(t, "move the disks", up, tcReadOutputs(t, p), "e2e",
		"all 2 nodes updated live, no reboot (diskStorage local-lvm → fast; disks moved one node at a time, cluster health checked after each)",
		"2 nodes (1 control plane, 1 worker), Talos v1.12.5, Kubernetes v1.34.1")

	for _, n := range out.Nodes {
		label := n.Name + " (" + n.Address + ")"
		if !strings.Contains(up.Output(), "node "+label+": VM disks moved live, no reboot (diskStorage local-lvm → fast); health checked after") ||
			!strings.Contains(up.Output(), "node "+label+": cluster healthy after the change") {
			t.Errorf("%s's disk move was not followed by a health check:\n%s", n.Name, up.Output())
		}
		cfg, _, _ := l.VMConfig(n.VMID)
		if !strings.HasPrefix(cfg["scsi0"], "fast:") {
			t.Errorf("%s: scsi0=%q, want it on fast", n.Name, cfg["scsi0"])
		}
	}
	if moves := l.tasks("qmmove", out.Nodes); !slices.Equal(moves, []string{out.Nodes[0].Name, out.Nodes[1].Name}) {
		t.Errorf("disk moves %v, want the control plane's, then the worker's", moves)
	}
	if r := l.restarts(seen, out.Nodes); len(r) > 0 {
		t.Errorf("a live disk move restarted VMs: %v", r)
	}

	// The OS disks grow live (resize), gated the same way.
	prog.DiskSize = 30
	p.WriteProgram(t, "cluster", prog.render(t))
	seen = len(l.restarts(0, out.Nodes))
	up = tcTimed(t, "grow the disks", func() harness.Result { return p.Up(t) })
	tcAssertSummary(t, "grow the disks", up, tcReadOutputs(t, p), "e2e",
		"all 2 nodes updated live, no reboot (diskSize 20 → 30 GiB; disks grown one node at a time, cluster health checked after each)",
		"2 nodes (1 control plane, 1 worker), Talos v1.12.5, Kubernetes v1.34.1")
	for _, n := range out.Nodes {
		label := n.Name + " (" + n.Address + ")"
		if !strings.Contains(up.Output(), "node "+label+": VM disks grown live, no reboot (diskSize 20GiB → 30GiB); health checked after") ||
			!strings.Contains(up.Output(), "node "+label+": cluster healthy after the change") {
			t.Errorf("%s's disk growth was not followed by a health check:\n%s", n.Name, up.Output())
		}
		cfg, _, _ := l.VMConfig(n.VMID)
		if !strings.Contains(cfg["scsi0"], "size=30G") {
			t.Errorf("%s: scsi0=%q, want 30 GiB", n.Name, cfg["scsi0"])
		}
	}
	if grown := l.tasks("resize", out.Nodes); !slices.Equal(grown, []string{out.Nodes[0].Name, out.Nodes[1].Name}) {
		t.Errorf("disk resizes %v, want the control plane's, then the worker's", grown)
	}
	if r := l.restarts(seen, out.Nodes); len(r) > 0 {
		t.Errorf("a live disk growth restarted VMs: %v", r)
	}
}

// tasks lists the nodes whose tasks of type kind (qmmove, resize) the lab
// ran, in order.
func (l *tcLab) tasks(kind string, nodes []tcNode) []string {
	task := regexp.MustCompile(`:` + kind + `:([0-9]+):`)
	var out []string
	for _, line := range l.logLines(task) {
		m := task.FindStringSubmatch(line)
		if i := slices.IndexFunc(nodes, func(n tcNode) bool { return m != nil && m[1] == strconv.Itoa(n.VMID) }); i >= 0 &&
			(len(out) == 0 || out[len(out)-1] != nodes[i].Name) {
			out = append(out, nodes[i].Name)
		}
	}
	return out
}
