package e2e

import (
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/e2e/harness"
)

// Bad TalosCluster input fails the preview with a message that says what is
// wrong, and nothing is created, not even by `up`.
func TestClusterBadInputsFailAtPreview(t *testing.T) {
	t.Parallel()
	l := startTCLab(t)
	env := harness.NewEnv(t)
	p := harness.NewYAMLProject(t, env, "badcluster", l.program(3, 2).render(t))
	p.ConfigureLab(t, l.conn)

	cases := []struct {
		name string
		edit func(string) string
		want string
	}{
		{"even control plane count", func(s string) string {
			return strings.Replace(s, "count: 3", "count: 2", 1)
		}, "controlPlane.count: 2 control planes: etcd needs an odd number of members to keep quorum; use 1, 3 or 5"},
		{"VIP outside the subnet", func(s string) string {
			return strings.Replace(s, "vip: "+l.addr(5), "vip: 10.99.0.5", 1)
		}, "vip: 10.99.0.5 is outside the node subnet " + l.AddressBlock().String()},
		{"VIP inside the range", func(s string) string {
			return strings.Replace(s, "vip: "+l.addr(5), "vip: "+l.addr(20), 1)
		}, "vip: " + l.addr(20) + " is inside the address range " + l.addr(10) + "-" + l.addr(40)},
		{"two nodes on one address", func(s string) string {
			return strings.Replace(s, "          count: 2\n", "          nodes: [{ address: "+l.addr(50)+" }, { address: "+l.addr(50)+" }]\n", 1)
		}, l.addr(50) + " is already the address of node e2e-workers-1"},
		{"pool too small", func(s string) string {
			s = strings.Replace(s, "          count: 2\n", "          count: 20\n", 1)
			return strings.Replace(s, "size: { cores: 2 }", "size: { cores: 2, memory: 16384 }", 1)
		}, "the hosts cannot fit the cluster"},
		{"an input that is another resource's output", func(s string) string {
			return withOtherResource(strings.Replace(s, "vip: "+l.addr(5), "vip: ${other.id}", 1))
		}, "vip is not known yet"},
		{"Kubernetes the Talos version does not support", func(s string) string {
			// The program names a supported version: replace it (a second
			// key would fail as bad YAML, which also says "kubernetesVersion").
			return strings.Replace(s, "kubernetesVersion: v1.34.1", "kubernetesVersion: v1.29.0", 1)
		}, "kubernetesVersion: version of Kubernetes 1.29.0 is too old to be used with Talos 1.12.5: Talos 1.12 runs Kubernetes 1.30 to 1.35 (support matrix) and defaults to 1.35.4; pick one of those or another Talos version"},
	}
	for _, c := range cases {
		p.WriteProgram(t, "badcluster", c.edit(l.program(3, 2).render(t)))
		r := p.Preview(t)
		if r.ExitCode == 0 || !strings.Contains(r.Output(), c.want) {
			t.Errorf("%s: preview exit %d, want a failure saying %q:\n%s", c.name, r.ExitCode, c.want, r.Output())
		}
		if vms := l.VMs(); len(vms) > 0 {
			t.Errorf("%s: the preview created VMs: %+v", c.name, vms)
		}
	}

	// The Proxmox CCM token secret is the one input that may come from
	// another resource: the preview plans the cluster without it.
	p.WriteProgram(t, "badcluster", withOtherResource(strings.Replace(l.program(3, 2).render(t), "      controlPlane:",
		"      cloudControllerManager:\n        proxmox:\n          url: https://pve.example.com:8006/api2/json\n          tokenId: \"k8s@pve!ccm\"\n          tokenSecret: ${other.machineSecrets}\n      controlPlane:", 1)))
	if r := p.Preview(t); r.ExitCode != 0 || !strings.Contains(r.Output(), "5 added") {
		t.Errorf("preview with the token secret from another resource: %s", r)
	}
	if vms := l.VMs(); len(vms) > 0 {
		t.Errorf("the preview created VMs: %+v", vms)
	}

	// up refuses the same way, before creating anything.
	p.WriteProgram(t, "badcluster", cases[0].edit(l.program(3, 2).render(t)))
	if r := p.Up(t); r.ExitCode == 0 || !strings.Contains(r.Output(), "etcd needs an odd number") {
		t.Errorf("up with an even control plane count: %s", r)
	}
	if vms := l.VMs(); len(vms) > 0 {
		t.Errorf("up created VMs: %+v", vms)
	}
	if state := p.StackExport(t); strings.Contains(state, `"type": "proxmoxtalos:`) {
		t.Errorf("the failed up left resources in the state:\n%s", state)
	}
}

// withOtherResource adds a resource whose outputs are unknown in a preview.
func withOtherResource(program string) string {
	return strings.Replace(program, "resources:\n", "resources:\n  other:\n    type: proxmoxtalos:talos:MachineSecrets\n    properties:\n      talosVersion: v1.12.5\n", 1)
}
