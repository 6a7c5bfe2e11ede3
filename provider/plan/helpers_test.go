package plan

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/blang/semver/v4"
)

// fakeRules stands in for talosconfig's version rules: Talos 1.12 supports
// Kubernetes 1.30-1.35, Talos 1.11 supports 1.29-1.34; upgrades may not
// skip a minor or go backwards. The plan tests check that Compute asks the
// rules and reports their answers, not the rules themselves.
type fakeRules struct{}

func (fakeRules) DefaultTalosVersion() string { return "v1.12.5" }

func (fakeRules) DefaultKubernetesVersion(talos string) (string, error) {
	switch semver.MustParse(strings.TrimPrefix(talos, "v")).Minor {
	case 12:
		return "v1.35.0", nil
	case 11:
		return "v1.34.1", nil
	}
	return "", fmt.Errorf("Talos %s is not supported: use v1.11 or v1.12", talos)
}

func (fakeRules) CheckVersions(talos, k8s string) error {
	t := semver.MustParse(strings.TrimPrefix(talos, "v"))
	k := semver.MustParse(strings.TrimPrefix(k8s, "v"))
	r, ok := map[uint64][2]uint64{12: {30, 35}, 11: {29, 34}}[t.Minor]
	lo, hi := r[0], r[1]
	if !ok {
		return fmt.Errorf("Talos %s is not supported: use v1.11 or v1.12", talos)
	}
	if k.Minor < lo || k.Minor > hi {
		return fmt.Errorf("Talos %s supports Kubernetes 1.%d to 1.%d, not %s", talos, lo, hi, k8s)
	}
	return nil
}

func minorStep(kind, from, to string) error {
	f := semver.MustParse(strings.TrimPrefix(from, "v"))
	t := semver.MustParse(strings.TrimPrefix(to, "v"))
	if t.LT(f) {
		return fmt.Errorf("%s cannot go back from %s to %s", kind, from, to)
	}
	if t.Minor > f.Minor+1 {
		return fmt.Errorf("%s upgrades may not skip a minor version (%s to %s)", kind, from, to)
	}
	return nil
}

func (fakeRules) CheckTalosUpgrade(from, to string) error { return minorStep("Talos", from, to) }
func (fakeRules) CheckKubernetesUpgrade(from, to string) error {
	return minorStep("Kubernetes", from, to)
}

// baseSpec is a 3 control plane + 2 worker cluster on three hosts.
func baseSpec() Spec {
	return Spec{
		Name:  "lab",
		Hosts: []Host{{Node: "pve1"}, {Node: "pve2"}, {Node: "pve3"}},
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
	p, err := Compute(spec, f, prev, fakeRules{})
	if err != nil {
		t.Fatalf("Compute: %v", err)
	}
	return p
}

// computeErr runs Compute expecting an *Error and returns its text.
func computeErr(t *testing.T, spec Spec, f Facts, prev *State) string {
	t.Helper()
	p, err := Compute(spec, f, prev, fakeRules{})
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
