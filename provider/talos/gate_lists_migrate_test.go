package talos

import (
	"maps"
	"net/netip"
	"testing"
	"time"

	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/vmwatch"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// oldShapeGate is a gate and vmIds as a state written before the lists
// left it holds them (no gateLists), and the record Check gives them.
func oldShapeGate(node string) (*HealthGate, map[string]int, string) {
	g := &HealthGate{ControlPlanes: []string{"10.0.0.10", node}, Workers: []string{"10.0.0.13"}, OtherNodes: []string{"10.0.0.14"}}
	ids := map[string]int{node: 101, "10.0.0.10": 102, "10.0.0.13": 103}

	return g, ids, gateLists{Workers: g.Workers, OtherNodes: g.OtherNodes, VmIds: maps.Clone(ids)}.record()
}

// shrunk fails unless args are in the current shape: no lists, the node's
// own VMID, and the record Check would have written.
func shrunk(t *testing.T, what string, g *HealthGate, ids map[string]int, rec *string, node, want string) {
	t.Helper()

	if g == nil || g.Workers != nil || g.OtherNodes != nil || len(g.ControlPlanes) != 2 || !maps.Equal(ids, map[string]int{node: 101}) ||
		rec == nil || *rec != want {
		t.Errorf("%s after a refresh: gate %+v, vmIds %v, gateLists %v; want no lists, {%s:101}, %q", what, g, ids, rec, node, want)
	}
}

// A refresh gives a ConfigurationApply state of the previous shape the
// current one, inputs and outputs, even when the node is not read.
func TestRefreshShrinksAnApplyStateOfThePreviousShape(t *testing.T) {
	t.Parallel()

	node := simtest.AddressBlock()(5).String() // nothing listens; its VM is gone: the read ends at once
	c := newSimCluster(t, simtest.AddressBlock()(2))
	r := &ConfigurationApply{opts: fastOpts, vms: &fakeVMs{state: "gone"}, readWait: 20 * time.Second}
	st := readState(c, node)
	g, ids, want := oldShapeGate(node)
	st.HealthGate, st.VmIds = g, ids
	in := st.ConfigurationApplyArgs
	in.VmIds = maps.Clone(ids)

	resp, err := r.Read(t.Context(), infer.ReadRequest[ConfigurationApplyArgs, ConfigurationApplyState]{ID: node, Inputs: in, State: st})
	if err != nil || resp.ID != node {
		t.Fatalf("read: id %q, %v", resp.ID, err)
	}

	shrunk(t, "state", resp.State.HealthGate, resp.State.VmIds, resp.State.GateLists, node, want)
	shrunk(t, "inputs", resp.Inputs.HealthGate, resp.Inputs.VmIds, resp.Inputs.GateLists, node, want)
}

// So does a refresh of ControlPlaneComponents, which reads nothing else.
func TestRefreshShrinksAComponentsStateOfThePreviousShape(t *testing.T) {
	t.Parallel()

	node := "10.0.0.11"
	g, ids, want := oldShapeGate(node)
	in := ControlPlaneComponentsArgs{Node: node, KubernetesVersion: "v1.35.2", HealthGate: g, VmIds: ids}
	st := ControlPlaneComponentsState{ControlPlaneComponentsArgs: in, Outcome: componentsUpdated}

	resp, err := (&ControlPlaneComponents{}).Read(t.Context(),
		infer.ReadRequest[ControlPlaneComponentsArgs, ControlPlaneComponentsState]{ID: node, Inputs: in, State: st})
	if err != nil || resp.ID != node || resp.State.Outcome != componentsUpdated || resp.State.KubernetesVersion != "v1.35.2" {
		t.Fatalf("read: %+v, %v", resp, err)
	}

	shrunk(t, "state", resp.State.HealthGate, resp.State.VmIds, resp.State.GateLists, node, want)
	shrunk(t, "inputs", resp.Inputs.HealthGate, resp.Inputs.VmIds, resp.Inputs.GateLists, node, want)

	if len(g.Workers) != 1 || len(ids) != 3 {
		t.Errorf("the read changed the request's gate %+v or vmIds %v", g, ids)
	}
}

// An update of a state of the previous shape without a refresh (lists in
// its outputs, none in the checked inputs) leaves the current shape: the
// lists the old state held are not carried over.
func TestUpdateOfAnApplyStateOfThePreviousShapeShrinksIt(t *testing.T) {
	t.Parallel()

	cfg := newSimCluster(t, netip.MustParseAddr("10.0.0.10"))
	c := gateCases()[1]
	in := c.inputs(cfg)

	old, _, err := framework.DecodeInputs[ConfigurationApplyArgs](t.Context(), property.NewMap(in))
	if err != nil {
		t.Fatal(err)
	}

	digest, err := talosapi.ConfigDigest([]byte(old.MachineConfiguration))
	if err != nil {
		t.Fatal(err)
	}

	// The same configuration and version: the update does not contact the node.
	prev := ConfigurationApplyState{ConfigurationApplyArgs: old, ConfigDigest: digest, AppliedMode: "install",
		InstalledImage: simtest.Installer(simtest.Version), RunningVersion: simtest.Version}

	checked := newRes(t, nodeServer(t, nil), "ConfigurationApply", "w").check(in)

	news, _, err := framework.DecodeInputs[ConfigurationApplyArgs](t.Context(), checked)
	if err != nil {
		t.Fatal(err)
	}

	r := &ConfigurationApply{opts: fastOpts}
	r.opts.Machines = vmwatch.New(&fakeVMs{state: "running"}, nil, nil, readWatch) // no Proxmox

	resp, err := r.Update(t.Context(), infer.UpdateRequest[ConfigurationApplyArgs, ConfigurationApplyState]{ID: c.node, Inputs: news, State: prev})
	if err != nil {
		t.Fatal(err)
	}

	out := resp.Output
	if out.HealthGate.Workers != nil || out.HealthGate.OtherNodes != nil || len(out.VmIds) != 1 || out.GateLists == nil ||
		*out.GateLists != *news.GateLists || out.ConfigDigest != digest {
		t.Errorf("state after the update: gate %+v, vmIds %v, gateLists %v", out.HealthGate, out.VmIds, out.GateLists)
	}
}
