package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
)

// sideBySide is a one-node cluster on pve1 in its own address range.
func sideBySide(l *tcLab, name string, first byte) string {
	return fmt.Sprintf(`resources:
  cluster:
    type: proxmoxtalos:TalosCluster
    properties:
      clusterName: %[1]s
      talosVersion: v1.12.5
      kubernetesVersion: v1.34.1
      image: { factoryUrl: %[2]s }
      hosts: [{ node: pve1 }]
      network:
        subnet: %[3]s
        gateway: %[4]s
        addressRange: { start: %[5]s, end: %[6]s }
      controlPlane: { count: 1 }
outputs:
  nodes: ${cluster.nodes}
`, name, l.FactoryURL(), l.AddressBlock(), l.addr(1), l.addr(first), l.addr(first+4))
}

// Issue 15: two clusters of two stacks with the same Talos version and
// schematic on one host share the ISO (one file, not a collision), and
// destroying one leaves the file the other boots from; a third stack that
// takes an existing cluster's name is refused at preview.
func TestClustersSideBySideAndStacksWithOneName(t *testing.T) {
	t.Parallel()
	l := startTCLab(t)
	env := harness.NewEnv(t)
	a := harness.NewYAMLProject(t, env, "twina", sideBySide(l, "twin", 10))
	a.ConfigureLab(t, l.conn)
	b := harness.NewYAMLProject(t, env, "twinb", sideBySide(l, "other", 20))
	b.ConfigureLab(t, l.conn)

	mustOK(t, "up of the first cluster", a.Up(t))
	isos := l.isoVolumes("pve1")
	if len(isos) != 1 {
		t.Fatalf("ISOs on pve1 after the first cluster: %v", isos)
	}
	upB := mustOK(t, "up of the second cluster (same versions, same host)", b.Up(t))
	if got := l.isoVolumes("pve1"); !slices.Equal(got, isos) {
		t.Fatalf("ISOs on pve1 after the second cluster: %v, want the first's %v shared", got, isos)
	}
	if o := squeeze(upB.Output()); strings.Contains(o, "set overwrite") || !strings.Contains(o, "is on node pve1 already and shared: it is used as it is") {
		t.Errorf("the second cluster's up does not say it uses the first's ISO:\n%s", upB.Output())
	}
	vms := l.vmsByName()
	if len(vms) != 2 || vms["twin-cp-1"].VMID == 0 || vms["other-cp-1"].VMID == 0 {
		t.Fatalf("VMs: %+v", vms)
	}
	for _, n := range []string{"twin-cp-1", "other-cp-1"} {
		if cd := l.cdroms([]tcNode{{Name: n, VMID: vms[n].VMID}}); cd[n] != isos[0] {
			t.Errorf("%s boots %q, want the shared %s", n, cd[n], isos[0])
		}
	}

	// A third stack that names its cluster "twin" is refused before anything.
	c := harness.NewYAMLProject(t, env, "twinc", sideBySide(l, "twin", 30))
	c.ConfigureLab(t, l.conn)
	mustFail(t, "preview of a second cluster named twin", c.Preview(t),
		`clusterName: cluster "twin" already exists on this Proxmox cluster in another Pulumi stack`,
		"choose another clusterName")
	mustFail(t, "up of a second cluster named twin", c.Up(t), "choose another clusterName")
	if got := len(l.VMs()); got != 2 {
		t.Errorf("the refused stack changed the VMs: %d", got)
	}
	mustOK(t, "the first stack still previews without changes", a.Preview(t, "--expect-no-changes"))

	// Destroying the first cluster keeps the ISO the second boots from.
	d := mustOK(t, "destroy of the first cluster", a.Destroy(t))
	if !strings.Contains(squeeze(d.Output()), "is left in place: it is shared and still used by VM") {
		t.Errorf("the destroy does not say why the ISO stays:\n%s", d.Output())
	}
	if got := l.isoVolumes("pve1"); !slices.Equal(got, isos) {
		t.Fatalf("ISOs after the first destroy: %v, want %v kept for the second cluster", got, isos)
	}
	mustOK(t, "the second stack still previews without changes", b.Preview(t, "--expect-no-changes"))

	// The last one out removes it.
	mustOK(t, "destroy of the second cluster", b.Destroy(t))
	if got := l.isoVolumes("pve1"); len(got) != 0 {
		t.Errorf("ISOs after both destroys: %v", got)
	}
	if vms := l.VMs(); len(vms) != 0 {
		t.Errorf("VMs after both destroys: %+v", vms)
	}
}
