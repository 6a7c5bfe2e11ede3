package plan

import (
	"errors"
	"strings"
	"testing"
)

// baseSpec is a 3 control plane + 2 worker cluster on three hosts.
// baseSpec is a cluster on Talos v1.12.5 and Kubernetes v1.35.2 (set, not
// the defaults, so that the upgrade paths from there stay tested as the
// defaults move).
func baseSpec() Spec {
	return Spec{
		Name:              "lab",
		TalosVersion:      "v1.12.5",
		KubernetesVersion: "v1.35.2",
		Hosts:             []Host{{Node: "pve1"}, {Node: "pve2"}, {Node: "pve3"}},
		Network: Network{
			NIC: NIC{
				Subnet:       "10.0.0.0/24",
				Gateway:      "10.0.0.1",
				AddressRange: &AddressRange{Start: "10.0.0.10", End: "10.0.0.50"},
			},
			DNSServers: []string{"10.0.0.1"},
		},
		VIP:         "10.0.0.5",
		WorkerPools: []WorkerPool{{Name: "workers", Count: 2}},
	}
}

// facts gives every named host the same free memory, online, 8 CPUs.
func facts(freeMiB int64, hosts ...string) Facts {
	f := Facts{Hosts: map[string]HostFacts{}}
	for _, h := range hosts {
		f.Hosts[h] = HostFacts{Online: true, FreeMemoryMiB: freeMiB, CPUs: 8}
	}
	return f
}

func roomy() Facts { return facts(64*1024, "pve1", "pve2", "pve3") }

func mustCompute(t *testing.T, spec Spec, f Facts, prev *State) *Plan {
	t.Helper()
	p, err := Compute(spec, f, prev)
	if err != nil {
		t.Fatalf("Compute: %v", err)
	}
	return p
}

// computeErr runs Compute expecting an *Error and returns its text.
func computeErr(t *testing.T, spec Spec, f Facts, prev *State) string {
	t.Helper()
	p, err := Compute(spec, f, prev)
	if err == nil {
		t.Fatalf("Compute succeeded, want an error; nodes: %v", nodeNames(p))
	}
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("error is %T, want *plan.Error: %v", err, err)
	}
	return err.Error()
}

func nodeNames(p *Plan) []string {
	var out []string
	for _, n := range p.Nodes {
		out = append(out, n.Name)
	}
	return out
}

func node(t *testing.T, p *Plan, name string) *Node {
	t.Helper()
	for i := range p.Nodes {
		if p.Nodes[i].Name == name {
			return &p.Nodes[i]
		}
	}
	t.Fatalf("no node %q in plan: %v", name, nodeNames(p))
	return nil
}

// placement maps node name -> host.
func placement(p *Plan) map[string]string {
	m := map[string]string{}
	for _, n := range p.Nodes {
		m[n.Name] = n.VM.Host
	}
	return m
}

// addresses maps node name -> primary address without prefix.
func addresses(p *Plan) map[string]string {
	m := map[string]string{}
	for _, n := range p.Nodes {
		m[n.Name] = addressOnly(n.VM.NICs[0].Address)
	}
	return m
}

func wantContains(t *testing.T, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in:\n%s", w, got)
		}
	}
}
