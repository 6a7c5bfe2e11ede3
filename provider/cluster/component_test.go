package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/siderolabs/talos/pkg/machinery/client/config"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
)

func TestNewClusterFanOut(t *testing.T) {
	t.Parallel()
	inv := &fakeInventory{hosts: threeHosts()}
	rec, resp, err := construct(t, inv, baseInputs())
	must(t, err)

	count := map[string]int{}
	for _, r := range rec.regs {
		count[r.typ]++
	}
	want := map[string]int{"MachineSecrets": 1, "ImageFactorySchematic": 1, "DownloadFile": 3, "VirtualMachine": 5, "ConfigurationApply": 5,
		"ControlPlaneComponents": 3, "Bootstrap": 1, "Kubeconfig": 1, "ClusterHealth": 1}
	if !maps.Equal(count, want) {
		t.Errorf("registered %v, want %v", count, want)
	}

	// Kubernetes upgrades in two phases: the control planes' component
	// stages chain in rollout order, each new node's after its VM. A new
	// cluster has no existing node to gate on, and nothing to upgrade: its
	// applies do not wait for the stages (an existing cluster's do, below).
	for _, c := range []struct {
		typ, res, dep string
		want          bool
	}{
		{"ControlPlaneComponents", "lab-cp-1-components", "VirtualMachine::lab-cp-1", true},
		{"ControlPlaneComponents", "lab-cp-2-components", "ControlPlaneComponents::lab-cp-1-components", true},
		{"ControlPlaneComponents", "lab-cp-3-components", "ControlPlaneComponents::lab-cp-2-components", true},
		{"ControlPlaneComponents", "lab-cp-3-components", "VirtualMachine::lab-cp-3", true},
		{"ConfigurationApply", "lab-cp-1", "ControlPlaneComponents::lab-cp-3-components", false},
		{"ConfigurationApply", "lab-workers-2", "ControlPlaneComponents::lab-cp-3-components", false},
	} {
		if got := depends(rec.get(t, c.typ, c.res), c.dep); got != c.want {
			t.Errorf("%s %s depends on %s = %v, want %v (deps %v)", c.typ, c.res, c.dep, got, c.want, rec.get(t, c.typ, c.res).deps)
		}
	}
	for _, st := range rec.byType("ControlPlaneComponents") {
		if _, ok := st.inputs.GetOk("healthGate"); ok || st.inputs.Get("kubernetesVersion").AsString() == "" || !st.inputs.Get("clientConfiguration").Secret() {
			t.Errorf("stage %s inputs %v: want the version, a secret client configuration and no gate on a new cluster", st.name, st.inputs)
		}
	}

	// A new cluster comes up together: control planes chain (each apply
	// returns at once; the chain orders a later destroy), none waits for
	// the bootstrap; new workers wait for the last control plane only, not
	// for each other. Every gate says the node comes up with its cluster.
	for _, c := range []struct {
		res, dep string
		want     bool
	}{
		{"lab-cp-1", "Bootstrap::lab", false},
		{"lab-cp-2", "ConfigurationApply::lab-cp-1", true},
		{"lab-cp-2", "Bootstrap::lab", false},
		{"lab-workers-1", "Bootstrap::lab", false},
		{"lab-cp-3", "ConfigurationApply::lab-cp-2", true},
		{"lab-workers-1", "ConfigurationApply::lab-cp-3", true},
		{"lab-workers-2", "ConfigurationApply::lab-cp-3", true},
		{"lab-workers-2", "ConfigurationApply::lab-workers-1", false},
	} {
		if got := depends(rec.get(t, "ConfigurationApply", c.res), c.dep); got != c.want {
			t.Errorf("apply %s depends on %s = %v, want %v (deps %v)", c.res, c.dep, got, c.want, rec.get(t, "ConfigurationApply", c.res).deps)
		}
	}
	for _, a := range rec.byType("ConfigurationApply") {
		if g := a.inputs.Get("healthGate").AsMap().Get("clusterCreate"); !g.IsBool() || !g.AsBool() {
			t.Errorf("new cluster: apply %s's gate clusterCreate = %v", a.name, g)
		}
	}
	// The control planes' VMs are created in parallel, waiting only for
	// their ISO; the workers' VMs after them (plan.Waits.AfterControlPlaneVMs),
	// in parallel too.
	for _, vm := range rec.byType("VirtualMachine") {
		var cpVMs []string
		for _, d := range vm.deps {
			switch {
			case strings.HasPrefix(d, "DownloadFile::") || strings.HasPrefix(d, "ImageFactorySchematic::"):
			case strings.HasPrefix(d, "VirtualMachine::lab-cp-") && strings.HasPrefix(vm.name, "lab-workers-"):
				cpVMs = append(cpVMs, d)
			default:
				t.Errorf("new VM %s waits for %s: new VMs wait only for their ISO, and a worker's for the control planes' VMs", vm.name, d)
			}
		}
		if strings.HasPrefix(vm.name, "lab-workers-") && len(cpVMs) != 3 {
			t.Errorf("new worker VM %s waits for the control planes' VMs %v, want all 3", vm.name, cpVMs)
		}
	}
	// Each node's gate requires the nodes up to it and tolerates the
	// others; a new worker does not require the other new workers.
	gate := healthGate(t, rec, "lab-cp-2")
	if cps, others := strs(gate.Get("controlPlanes")), strs(gate.Get("otherNodes")); !slices.Equal(cps, []string{"10.0.0.10", "10.0.0.11"}) ||
		!slices.Equal(others, []string{"10.0.0.12", "10.0.0.13", "10.0.0.14"}) {
		t.Errorf("gate lab-cp-2 requires %v, tolerates %v", cps, others)
	}
	if w := gate.Get("workers"); !w.IsNull() || gate.Get("kubernetesEndpoint").AsString() != "https://10.0.0.5:6443" {
		t.Errorf("gate lab-cp-2 requires workers %v, checks through %v", w, gate.Get("kubernetesEndpoint"))
	}
	if vm := gate.Get("vm").AsString(); !strings.HasPrefix(vm, "cores=2 sockets=1 cpu=x86-64-v2-AES memory=4096MiB cloudInit=") {
		t.Errorf("gate lab-cp-2 vm %q", vm)
	}
	if g := healthGate(t, rec, "lab-workers-2"); !slices.Equal(strs(g.Get("workers")), []string{"10.0.0.14"}) || !slices.Contains(strs(g.Get("otherNodes")), "10.0.0.13") {
		t.Errorf("new worker lab-workers-2's gate requires workers %v, tolerates %v", g.Get("workers"), g.Get("otherNodes"))
	}
	if b := rec.get(t, "Bootstrap", "lab"); !depends(b, "ConfigurationApply::lab-cp-1") || b.inputs.Get("node").AsString() != "10.0.0.10" {
		t.Errorf("bootstrap %v on %v, want after lab-cp-1's apply on its own address", b.deps, b.inputs.Get("node"))
	}
	if k := rec.get(t, "Kubeconfig", "lab"); k.inputs.Get("kubernetesEndpoint").AsString() != "https://10.0.0.5:6443" {
		t.Errorf("kubeconfig endpoint %v, want the VIP", k.inputs.Get("kubernetesEndpoint"))
	}
	final := rec.get(t, "ClusterHealth", "lab-healthy")
	if got := final.inputs.Get("controlPlanes").AsArray().Len(); got != 3 || !final.inputs.Get("otherNodes").IsNull() || final.inputs.Get("workers").AsArray().Len() != 2 {
		t.Errorf("final health checks %v and %v, tolerates %v", final.inputs.Get("controlPlanes"), final.inputs.Get("workers"), final.inputs.Get("otherNodes"))
	}
	if !depends(final, "ConfigurationApply::lab-workers-2") || !depends(final, "Kubeconfig::lab") {
		t.Errorf("final health %v", final.deps)
	}
	if _, ok := final.inputs.GetOk("triggers"); ok {
		t.Errorf("final health has triggers: %v", final.inputs.Get("triggers"))
	}

	// Only the head of the control plane chain, removed last on destroy,
	// is reset without leaving etcd.
	for _, a := range rec.byType("ConfigurationApply") {
		graceful := a.inputs.Get("reset").AsMap().Get("graceful").AsBool()
		if graceful != (a.name != "lab-cp-1") {
			t.Errorf("%s reset graceful = %v", a.name, graceful)
		}
		cfg := a.inputs.Get("machineConfiguration")
		if !cfg.Secret() || !strings.Contains(cfg.AsString(), "hostname: "+a.name) {
			t.Errorf("%s machine configuration secret=%v, hostname missing", a.name, cfg.Secret())
		}
	}

	sch := rec.get(t, "ImageFactorySchematic", "lab-schematic")
	if ext := strs(sch.inputs.Get("extensions")); !slices.Equal(ext, []string{"siderolabs/qemu-guest-agent"}) || sch.inputs.Get("talosVersion").AsString() != "v1.12.5" {
		t.Errorf("schematic inputs %v", sch.inputs)
	}
	for _, d := range rec.byType("DownloadFile") {
		if !depends(d, "ImageFactorySchematic::lab-schematic") {
			t.Errorf("%s downloads before the schematic is registered: %v", d.name, d.deps)
		}
	}
	vm := rec.get(t, "VirtualMachine", "lab-workers-1").inputs
	if iso := vm.Get("iso").AsString(); !strings.HasPrefix(iso, "local:iso/talos-v") {
		t.Errorf("iso = %q", iso)
	}
	if _, ok := vm.GetOk("vmId"); ok {
		t.Errorf("vmId given for a VM the provider allocates")
	}
	ip := vm.Get("cloudInit").AsMap().Get("ipConfigs").AsArray().Get(0).AsMap().Get("ipv4").AsMap()
	if ip.Get("address").AsString() != "10.0.0.13/24" || ip.Get("gateway").AsString() != "10.0.0.1" {
		t.Errorf("cloud-init %v", ip)
	}

	state := resp.State
	// An update stores what the cluster is (the pending change is logged).
	if s := state.Get("summary").AsString(); s != "5 nodes (3 control planes, 2 workers), Talos v1.12.5, Kubernetes v1.35.2" {
		t.Errorf("summary %q", s)
	}
	// A preview says what the update will do.
	_, pre, err := constructDry(t, true, inv, baseInputs())
	must(t, err)
	if s := pre.State.Get("summary").AsString(); s != "5 added: lab-cp-1, lab-cp-2, lab-cp-3, +2 more; new cluster: all nodes configured at once, etcd bootstrapped on lab-cp-1, one health check at the end" {
		t.Errorf("preview summary %q", s)
	}
	for _, k := range []string{"kubeconfig", "talosconfig", "machineSecrets"} {
		if !state.Get(k).Secret() {
			t.Errorf("output %s is not secret", k)
		}
	}
	// talosconfig as talosctl would set it up: the control planes as
	// endpoints (never the VIP), the first control plane as the one default
	// node (talosctl kubeconfig refuses several; etcd needs a control plane).
	tc, err := config.FromString(state.Get("talosconfig").AsString())
	must(t, err)
	if ctx := tc.Contexts[tc.Context]; ctx == nil || !slices.Equal(ctx.Endpoints, []string{"10.0.0.10", "10.0.0.11", "10.0.0.12"}) ||
		!slices.Equal(ctx.Nodes, []string{"10.0.0.10"}) {
		t.Errorf("talosconfig context %q: %+v", tc.Context, ctx)
	}
	nodes := state.Get("nodes").AsArray()
	if nodes.Len() != 5 {
		t.Fatalf("nodes output: %v", nodes)
	}
	n0 := nodes.Get(0).AsMap()
	if n0.Get("name").AsString() != "lab-cp-1" || n0.Get("role").AsString() != "controlplane" || n0.Get("vmId").AsNumber() < 100 ||
		n0.Get("address").AsString() != "10.0.0.10" || n0.Get("macAddress").AsString() == "" || n0.Get("proxmoxNode").AsString() == "" {
		t.Errorf("nodes[0] = %v", n0)
	}
}

// The second run finds the cluster in Proxmox: the same inputs give the
// same resources, now gated one node at a time.
func TestExistingClusterIsStableAndGated(t *testing.T) {
	t.Parallel()
	inv, first := existingCluster(t, baseInputs())
	second, resp, err := construct(t, inv, baseInputs(), appliedConfigs(first))
	must(t, err)

	// A no-op preview computes the summary the update stored: no output
	// diff.
	stored := resp.State.Get("summary").AsString()
	if stored != "5 nodes (3 control planes, 2 workers), Talos v1.12.5, Kubernetes v1.35.2" {
		t.Errorf("summary %q", stored)
	}
	_, preview, err := constructDry(t, true, inv, baseInputs(), appliedConfigs(first))
	must(t, err)
	if s := preview.State.Get("summary").AsString(); s != stored {
		t.Errorf("no-op preview: summary %q, the update stored %q", s, stored)
	}
	if !slices.Equal(first.keys(), second.keys()) {
		t.Errorf("resources differ:\n%v\n%v", first.keys(), second.keys())
	}
	for _, typ := range []string{"VirtualMachine", "ConfigurationApply", "DownloadFile", "Bootstrap", "Kubeconfig", "MachineSecrets", "ImageFactorySchematic", "ClusterHealth"} {
		for _, r1 := range first.byType(typ) {
			r2 := second.get(t, typ, r1.name)
			// A gate is no change by itself (ConfigurationApply's Diff): a
			// worker created in parallel with the others requires them
			// once they exist. Nor are the VMIDs of the nodes it waits
			// for (vmIds), which follow the gate.
			in1, in2 := r1.inputs.Delete("healthGate", "vmIds"), r2.inputs.Delete("healthGate", "vmIds")
			if !in1.Equals(in2) {
				t.Errorf("%s %s inputs changed between runs:\n%v\n%v", typ, r1.name, r1.inputs, r2.inputs)
			}
		}
	}
	if w := strs(healthGate(t, second, "lab-workers-2").Get("workers")); !slices.Equal(w, []string{"10.0.0.13", "10.0.0.14"}) {
		t.Errorf("existing lab-workers-2's gate requires workers %v", w)
	}
	// An existing node's gate sends an empty list, not a missing key (what
	// ignoreChanges leaves of a stored gate, which Check refuses when the
	// last gate had one).
	for _, name := range []string{"lab-cp-1", "lab-workers-2"} {
		for key, want := range map[string]bool{"workers": name == "lab-cp-1", "otherNodes": name == "lab-workers-2"} {
			if v := healthGate(t, second, name).Get(key); want && (!v.IsArray() || v.AsArray().Len() != 0) {
				t.Errorf("existing %s's gate sends %s %v, want an empty list", name, key, v)
			}
		}
	}
	// The waits know the VMs of the nodes they wait for: the node's own
	// and its gate's, every node's for the final health check.
	vmIDs := func(typ, name string) []string {
		var out []string
		ids := map[float64]bool{}
		for addr, id := range second.get(t, typ, name).inputs.Get("vmIds").AsMap().All {
			if !id.IsNumber() || id.AsNumber() < 100 || ids[id.AsNumber()] {
				t.Errorf("%s %s: vmIds[%s] = %v, want a VMID of its own", typ, name, addr, id)
			}
			ids[id.AsNumber()] = true
			out = append(out, addr)
		}
		slices.Sort(out)
		return out
	}
	all := []string{"10.0.0.10", "10.0.0.11", "10.0.0.12", "10.0.0.13", "10.0.0.14"}
	for _, c := range []struct {
		typ, name string
		want      []string
	}{
		{"ConfigurationApply", "lab-workers-2", all}, {"ConfigurationApply", "lab-cp-1", all[:1]},
		{"ConfigurationApply", "lab-cp-3", all[:3]}, {"ClusterHealth", "lab-healthy", all},
		{"Bootstrap", "lab", all[:1]}, {"Kubeconfig", "lab", all[:1]},
		{"ControlPlaneComponents", "lab-cp-2-components", all},
	} {
		if got := vmIDs(c.typ, c.name); !slices.Equal(got, c.want) {
			t.Errorf("%s %s: vmIds for %v, want %v", c.typ, c.name, got, c.want)
		}
	}
	// On an existing cluster whose nodes all run and answer, the component
	// stages are gated on every node and wait only for VMs that wait for
	// nothing (a running VM waits for an apply, which waits for the
	// stages).
	for _, st := range second.byType("ControlPlaneComponents") {
		g := st.inputs.Get("healthGate").AsMap()
		if !slices.Equal(strs(g.Get("controlPlanes")), []string{"10.0.0.10", "10.0.0.11", "10.0.0.12"}) || !slices.Equal(strs(g.Get("workers")), []string{"10.0.0.13", "10.0.0.14"}) {
			t.Errorf("stage %s gate %v: want every existing node required", st.name, g)
		}
		for _, d := range st.deps {
			if vm, ok := strings.CutPrefix(d, "VirtualMachine::"); ok && len(appliesIn(second.get(t, "VirtualMachine", vm).deps)) > 0 {
				t.Errorf("stage %s waits for %s, which waits for %v", st.name, d, second.get(t, "VirtualMachine", vm).deps)
			}
		}
	}
	if h := second.get(t, "ClusterHealth", "lab-healthy"); h.inputs.Get("recheck").IsString() {
		t.Errorf("the final check of a cluster whose VMs all run checks again: %v", h.inputs.Get("recheck"))
	}

	// An existing cluster rolls: every apply waits for the last component
	// stage, every one after the first for the bootstrap, and none is
	// created with the cluster.
	for _, a := range second.byType("ConfigurationApply") {
		if g, ok := a.inputs.Get("healthGate").AsMap().GetOk("clusterCreate"); ok {
			t.Errorf("existing cluster: apply %s's gate clusterCreate = %v", a.name, g)
		}
		if !depends(a, "ControlPlaneComponents::lab-cp-3-components") || depends(a, "Bootstrap::lab") != (a.name != "lab-cp-1") {
			t.Errorf("existing cluster: apply %s waits for %v", a.name, a.deps)
		}
	}
	for _, c := range []struct{ kind, res, dep string }{
		{"VirtualMachine", "lab-cp-2", "ConfigurationApply::lab-cp-1"},
		{"ConfigurationApply", "lab-cp-2", "ConfigurationApply::lab-cp-1"},
		{"ConfigurationApply", "lab-workers-1", "ConfigurationApply::lab-cp-3"},
		{"VirtualMachine", "lab-workers-2", "ConfigurationApply::lab-workers-1"},
		{"ConfigurationApply", "lab-workers-2", "ConfigurationApply::lab-workers-1"},
	} {
		if r := second.get(t, c.kind, c.res); !depends(r, c.dep) {
			t.Errorf("%s %s does not wait for %s: %v", c.kind, c.res, c.dep, r.deps)
		}
	}
}

// healthGate is the health gate of a node's ConfigurationApply.
func healthGate(t *testing.T, rec *recorder, node string) property.Map {
	t.Helper()
	return rec.get(t, "ConfigurationApply", node).inputs.Get("healthGate").AsMap()
}

func TestScaleOutAndIn(t *testing.T) {
	t.Parallel()
	inv, first := existingCluster(t, baseInputs())
	running := appliedConfigs(first)

	in := baseInputs()
	in["workerPools"] = []any{map[string]any{"name": "workers", "count": 3}}
	rec, resp, err := constructDry(t, true, inv, in, running)
	must(t, err)
	if s := resp.State.Get("summary").AsString(); s != "1 added: lab-workers-3" {
		t.Errorf("summary %q", s)
	}
	a := rec.get(t, "ConfigurationApply", "lab-workers-3")
	if !depends(a, "ConfigurationApply::lab-cp-3") || depends(a, "ConfigurationApply::lab-workers-2") {
		t.Errorf("new worker's apply waits for %v: want the last control plane only", a.deps)
	}
	if ip := rec.get(t, "VirtualMachine", "lab-workers-3").inputs.Get("cloudInit").AsMap().Get("ipConfigs").AsArray().Get(0).AsMap().Get("ipv4").AsMap().Get("address").AsString(); ip != "10.0.0.15/24" {
		t.Errorf("new worker address %s", ip)
	}

	in["workerPools"] = []any{map[string]any{"name": "workers", "count": 1}}
	rec, resp, err = constructDry(t, true, inv, in, running)
	must(t, err)
	if s := resp.State.Get("summary").AsString(); s != "1 removed (drained first): lab-workers-2" {
		t.Errorf("summary %q", s)
	}
	for _, k := range rec.keys() {
		if strings.HasSuffix(k, "::lab-workers-2") {
			t.Errorf("%s still registered", k)
		}
	}
	// The health checks run before Pulumi deletes the removed node: they
	// tolerate it.
	for _, h := range rec.byType("ClusterHealth") {
		if others := strs(h.inputs.Get("otherNodes")); !slices.Contains(others, "10.0.0.14") {
			t.Errorf("health check %s tolerates %v, not the removed worker", h.name, others)
		}
	}
	// The gates too, in the update (a preview leaves an existing node's
	// gate lists unknown: gate_preview.go).
	upd, _, err := constructDry(t, false, inv, in, running)
	must(t, err)
	for _, a := range upd.byType("ConfigurationApply") {
		if others := strs(a.inputs.Get("healthGate").AsMap().Get("otherNodes")); !slices.Contains(others, "10.0.0.14") {
			t.Errorf("%s's gate tolerates %v, not the removed worker", a.name, others)
		}
	}
}

// Bad input fails before any resource is registered.
func TestBadInputRegistersNothing(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		edit func(map[string]any)
		want string
	}{
		"even control planes": {func(in map[string]any) { in["controlPlane"] = map[string]any{"count": 2} }, "controlPlane.count: 2 control planes"},
		"vip outside subnet":  {func(in map[string]any) { in["vip"] = "10.9.0.5" }, "vip: 10.9.0.5 is outside the node subnet"},
		"vip inside range":    {func(in map[string]any) { in["vip"] = "10.0.0.20" }, "inside the address range"},
		"duplicate addresses": {func(in map[string]any) {
			in["workerPools"] = []any{map[string]any{"name": "workers", "nodes": []any{
				map[string]any{"address": "10.0.0.60"}, map[string]any{"address": "10.0.0.60"}}}}
		}, "10.0.0.60 is already the address of node lab-workers-1"},
		"pool too small": {func(in map[string]any) {
			in["workerPools"] = []any{map[string]any{"name": "workers", "count": 30, "size": map[string]any{"memory": 8192}}}
		}, "short by"},
		"kubernetes unsupported": {func(in map[string]any) { in["kubernetesVersion"] = "v1.20.0" }, "kubernetesVersion"},
		"bad patch":              {func(in map[string]any) { in["patches"] = []any{"machine:\n  kubelet:\n    extraArgs: [not, a, map]\n"} }, "machine configuration of node lab-cp-1"},
		// The factory's list is asked before anything is registered.
		"unknown extension": {func(in map[string]any) {
			in["image"] = map[string]any{"extensions": []any{"qemu-guest-agent", "iscsi-tool"}}
		},
			`image.extensions: image factory http://127.0.0.1:`},
		"unknown extension suggestion": {func(in map[string]any) {
			in["image"] = map[string]any{"extensions": []any{"qemu-guest-agent", "iscsi-tool"}}
		},
			`no official extension "siderolabs/iscsi-tool" (did you mean siderolabs/iscsi-tools or `},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			in := baseInputs()
			c.edit(in)
			rec, _, err := construct(t, &fakeInventory{hosts: threeHosts()}, in)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if keys := rec.keys(); len(keys) > 0 {
				t.Errorf("registered %v before failing", keys)
			}
		})
	}
}

func TestProxmoxCCMSecretReachesOnlyTheConfigs(t *testing.T) {
	t.Parallel()
	in := baseInputs()
	in["cloudControllerManager"] = map[string]any{"proxmox": map[string]any{
		"url": "https://pve.example.com:8006/api2/json", "tokenId": "kubernetes@pve!ccm",
		"tokenSecret": presource.MakeSecret(presource.NewProperty("s3cr3t-token-value")),
	}}
	rec, resp, err := construct(t, &fakeInventory{hosts: threeHosts()}, in)
	must(t, err)
	cfg := rec.get(t, "ConfigurationApply", "lab-cp-1").inputs.Get("machineConfiguration")
	if !cfg.Secret() || !strings.Contains(cfg.AsString(), "s3cr3t-token-value") || strings.Contains(cfg.AsString(), tokenSecretPlaceholder) {
		t.Errorf("control plane configuration (secret=%v) lacks the real token secret", cfg.Secret())
	}
	for _, r := range rec.regs {
		if r.typ != "ConfigurationApply" && strings.Contains(fmt.Sprint(r.inputs), "s3cr3t") {
			t.Errorf("%s carries the token secret", r.key())
		}
	}
	if strings.Contains(resp.State.Get("summary").AsString(), "s3cr3t") {
		t.Errorf("summary carries the secret")
	}
}

func strs(v property.Value) []string {
	if v.IsNull() {
		return nil
	}
	var out []string
	for _, e := range v.AsArray().AsSlice() {
		out = append(out, e.AsString())
	}
	return out
}

// The summary says what machine configuration changes do to each node,
// from the configuration the node runs: live, or a reboot (Talos' rule);
// a node that does not answer is a warning.
func TestSummaryClassifiesConfigChanges(t *testing.T) {
	t.Parallel()
	inv, first := existingCluster(t, baseInputs())
	running := appliedConfigs(first)

	in := baseInputs()
	in["workerPools"] = []any{map[string]any{"name": "workers", "count": 2, "labels": map[string]any{"tier": "web"}}}
	_, resp, err := constructDry(t, true, inv, in, running)
	must(t, err)
	if s := resp.State.Get("summary").AsString(); s != "2 updated live, no reboot: lab-workers-1, lab-workers-2" {
		t.Errorf("label change: summary %q", s)
	}
	if resp.State.Get("summary").Secret() {
		t.Errorf("the summary is secret (it holds no secret)")
	}

	in["workerPatches"] = []any{"machine:\n  env:\n    HTTP_PROXY: http://proxy:3128\n"}
	_, resp, err = constructDry(t, true, inv, in, running)
	must(t, err)
	if s := resp.State.Get("summary").AsString(); s != "2 rebooted one at a time (machine.env): lab-workers-1, lab-workers-2" {
		t.Errorf("env change: summary %q", s)
	}

	delete(running, "10.0.0.14")
	_, resp, err = constructDry(t, true, inv, in, running)
	must(t, err)
	if s := resp.State.Get("summary").AsString(); s != "1 rebooted (machine.env): lab-workers-1" {
		t.Errorf("with lab-workers-2 unreachable: summary %q", s)
	}
}

// A template clone instead of the ISO: no download, each VM cloned from
// the template on its own host; data disks, a second NIC and VLANs reach
// the VM inputs.
func TestCloneDataDisksAndSecondNIC(t *testing.T) {
	t.Parallel()
	in := baseInputs()
	in["image"] = map[string]any{"template": map[string]any{"vmId": 9000}}
	in["diskInterface"] = "virtio"
	net := in["network"].(map[string]any)
	net["vlan"] = 20
	net["secondary"] = map[string]any{"bridge": "vmbr1", "subnet": "10.9.0.0/24", "addressRange": map[string]any{"start": "10.9.0.10", "end": "10.9.0.50"}}
	in["workerPools"] = []any{map[string]any{"name": "workers", "count": 1, "dataDisks": []any{map[string]any{"size": 100, "volume": "data"}}}}
	rec, _, err := construct(t, &fakeInventory{hosts: threeHosts()}, in)
	must(t, err)
	if d := rec.byType("DownloadFile"); len(d) != 0 {
		t.Errorf("downloads for a template clone: %v", d)
	}
	vm := rec.get(t, "VirtualMachine", "lab-workers-1")
	clone := vm.inputs.Get("clone").AsMap()
	if clone.Get("vmId").AsNumber() != 9000 || clone.Get("node").AsString() != vm.inputs.Get("node").AsString() || !clone.Get("full").AsBool() {
		t.Errorf("clone %v on %v", clone, vm.inputs.Get("node"))
	}
	if _, ok := vm.inputs.GetOk("iso"); ok {
		t.Errorf("a clone also gets an ISO")
	}
	var disks []string
	for _, d := range vm.inputs.Get("disks").AsArray().AsSlice() {
		disks = append(disks, fmt.Sprintf("%s:%v", d.AsMap().Get("interface").AsString(), d.AsMap().Get("size").AsNumber()))
	}
	if !slices.Equal(disks, []string{"virtio0:20", "virtio1:100"}) {
		t.Errorf("disks %v", disks)
	}
	nics := vm.inputs.Get("networkDevices").AsArray()
	if nics.Len() != 2 || nics.Get(0).AsMap().Get("vlanId").AsNumber() != 20 || nics.Get(1).AsMap().Get("bridge").AsString() != "vmbr1" {
		t.Errorf("network devices %v", nics)
	}
	ips := vm.inputs.Get("cloudInit").AsMap().Get("ipConfigs").AsArray()
	if ips.Get(1).AsMap().Get("ipv4").AsMap().Get("address").AsString() != "10.9.0.13/24" {
		t.Errorf("second NIC address %v", ips.Get(1))
	}
	cfg := rec.get(t, "ConfigurationApply", "lab-workers-1").inputs.Get("machineConfiguration").AsString()
	for _, want := range []string{"disk: /dev/vda", "kind: UserVolumeConfig", "name: data", `disk.dev_path == "/dev/vdb"`} {
		if !strings.Contains(cfg, want) {
			t.Errorf("worker configuration lacks %q", want)
		}
	}
}

// A failed rollout leaves the VMs' version tags ahead of the nodes (a VM's
// tags change just before its node is upgraded): the summary still says
// which nodes are left to upgrade, from the versions the nodes run.
func TestSummaryAfterAFailedUpgrade(t *testing.T) {
	t.Parallel()
	old := baseInputs()
	old["talosVersion"], old["kubernetesVersion"] = "v1.12.5", "v1.34.1"
	inv, first := existingCluster(t, old)
	before := appliedConfigs(first)

	next := baseInputs()
	next["talosVersion"], next["kubernetesVersion"] = "v1.12.6", "v1.35.2"
	second, resp, err := constructDry(t, true, inv, next, before)
	must(t, err)
	want := "all 5 nodes upgraded one at a time, control planes first (Talos v1.12.5 → v1.12.6; VMs kept); Kubernetes v1.34.1 → v1.35.2, control plane components first, then kubelets node by node"
	if s := resp.State.Get("summary").AsString(); s != want {
		t.Errorf("upgrade preview: summary %q, want %q", s, want)
	}

	// The rollout stopped after lab-cp-1: only lab-cp-1 runs the new
	// version.
	inv.vms = observedFrom(t, second)
	running := appliedConfigs(first)
	running["10.0.0.10"] = appliedConfigs(second)["10.0.0.10"]
	_, resp, err = constructDry(t, true, inv, next, running)
	must(t, err)
	want = "4 upgraded one at a time, control planes first (Talos v1.12.5 → v1.12.6; VMs kept): lab-cp-2, lab-cp-3, lab-workers-1, lab-workers-2; Kubernetes v1.34.1 → v1.35.2, control plane components first, then kubelets node by node"
	if s := resp.State.Get("summary").AsString(); s != want {
		t.Errorf("after the failed rollout: summary %q, want %q", s, want)
	}

	// Once every node runs it, nothing is left.
	_, resp, err = constructDry(t, true, inv, next, appliedConfigs(second))
	must(t, err)
	if s := resp.State.Get("summary").AsString(); s != "5 nodes (3 control planes, 2 workers), Talos v1.12.6, Kubernetes v1.35.2" {
		t.Errorf("after the rollout: summary %q", s)
	}
}

// A Talos upgrade keeps every VM's ISO and its download (Proxmox refuses to
// start a VM whose ISO is gone; an installed node needs no new one); a node
// added with it boots the new version's ISO, downloaded next to the old.
func TestUpgradeKeepsISOs(t *testing.T) {
	t.Parallel()
	inv, first := existingCluster(t, baseInputs())

	next := baseInputs()
	next["talosVersion"] = "v1.12.6"
	next["workerPools"] = []any{map[string]any{"name": "workers", "count": 3}}
	rec, _, err := constructDry(t, true, inv, next, appliedConfigs(first))
	must(t, err)

	for _, vm := range first.byType("VirtualMachine") {
		if got := rec.get(t, "VirtualMachine", vm.name).inputs; !got.Get("iso").Equals(vm.inputs.Get("iso")) || !got.Get("tags").Equals(vm.inputs.Get("tags")) {
			t.Errorf("%s: iso %v -> %v, tags %v -> %v", vm.name, vm.inputs.Get("iso"), got.Get("iso"), vm.inputs.Get("tags"), got.Get("tags"))
		}
	}
	for _, d := range first.byType("DownloadFile") {
		if got := rec.get(t, "DownloadFile", d.name); !got.inputs.Equals(d.inputs) {
			t.Errorf("%s changed: %v -> %v", d.name, d.inputs, got.inputs)
		}
	}
	w3 := rec.get(t, "VirtualMachine", "lab-workers-3").inputs
	host := w3.Get("node").AsString()
	if iso := w3.Get("iso").AsString(); !strings.HasPrefix(iso, "local:iso/talos-v1.12.6-ce4c980550dd-") {
		t.Errorf("new worker boots %s", iso)
	}
	d := rec.get(t, "DownloadFile", "lab-iso-"+host+"-v1.12.6-ce4c980550dd")
	if url := d.inputs.Get("url").AsString(); !strings.HasSuffix(url, "/v1.12.6/nocloud-amd64.iso") {
		t.Errorf("new ISO from %s", url)
	}
	// Where a file came from does not change it: a kept ISO keeps its URL.
	if !slices.Equal(d.ignore, []string{"url"}) {
		t.Errorf("ISO download ignores changes of %v, want url", d.ignore)
	}
	if n := len(rec.byType("DownloadFile")); n != 4 {
		t.Errorf("%d downloads, want the 3 kept and 1 new: %v", n, rec.keys())
	}
	for _, vm := range first.byType("VirtualMachine") {
		for _, tag := range strs(vm.inputs.Get("tags")) {
			if strings.HasPrefix(tag, "talos-") || strings.HasPrefix(tag, "k8s-") {
				t.Errorf("%s has a version tag %s", vm.name, tag)
			}
		}
	}
}

// The versions a cluster runs come from its nodes (Proxmox does not know
// them): a program without versions keeps them, whatever the provider's
// defaults, and a version step the nodes cannot take fails the preview.
func TestVersionsComeFromTheNodes(t *testing.T) {
	t.Parallel()
	old := baseInputs()
	old["talosVersion"], old["kubernetesVersion"] = "v1.11.3", "v1.33.4"
	inv, first := existingCluster(t, old)
	running := appliedConfigs(first)

	rec, resp, err := constructDry(t, true, inv, unversioned(), running)
	must(t, err)
	if tv, kv := resp.State.Get("talosVersion").AsString(), resp.State.Get("kubernetesVersion").AsString(); tv != "v1.11.3" || kv != "v1.33.4" {
		t.Errorf("a program without versions plans Talos %s, Kubernetes %s; the cluster runs v1.11.3, v1.33.4", tv, kv)
	}
	if s := resp.State.Get("summary").AsString(); strings.Contains(s, "upgrade") || strings.Contains(s, "→") {
		t.Errorf("summary %q, want no upgrade", s)
	}
	for _, a := range rec.byType("ConfigurationApply") {
		want := appliedConfigs(first)[a.inputs.Get("node").AsString()]
		if got := a.inputs.Get("machineConfiguration").AsString(); got != want {
			t.Errorf("%s: configuration changes although nothing in the program does", a.name)
		}
	}

	// A secrets bundle keeps the contract it was created with: a version
	// change is not a change of the secrets.
	for _, r := range []*recorder{first, rec} {
		if sec := r.get(t, "MachineSecrets", "lab-secrets"); !slices.Equal(sec.ignore, []string{"talosVersion"}) {
			t.Errorf("MachineSecrets ignores changes of %v, want talosVersion", sec.ignore)
		}
	}

	// Kubernetes alone, two minors ahead: the skew policy refuses it.
	next := baseInputs()
	next["talosVersion"], next["kubernetesVersion"] = "v1.12.5", "v1.35.2"
	_, _, err = constructDry(t, true, inv, next, running)
	if err == nil || !strings.Contains(err.Error(), "runs Kubernetes v1.33.4: Kubernetes upgrades go one minor version at a time (v1.33.4 to v1.35.2): upgrade to v1.34 first") {
		t.Errorf("two Kubernetes minors at once: %v", err)
	}
	// Talos only: Kubernetes stays what runs.
	next = unversioned()
	next["talosVersion"] = "v1.12.5"
	_, resp, err = constructDry(t, true, inv, next, running)
	must(t, err)
	if kv := resp.State.Get("kubernetesVersion").AsString(); kv != "v1.33.4" {
		t.Errorf("a Talos upgrade plans Kubernetes %s, want v1.33.4 (what runs)", kv)
	}

	// A node that does not answer is a warning; the others say what runs.
	partial := appliedConfigs(first)
	delete(partial, "10.0.0.10")
	_, resp, err = constructDry(t, true, inv, unversioned(), partial)
	must(t, err)
	if tv := resp.State.Get("talosVersion").AsString(); tv != "v1.11.3" {
		t.Errorf("with lab-cp-1 down: Talos %s, want v1.11.3 from the other nodes", tv)
	}
	if w := strs(resp.State.Get("warnings")); !slices.ContainsFunc(w, func(s string) bool {
		return strings.HasPrefix(s, "node lab-cp-1 did not say what it runs (dial tcp 10.0.0.10:50000: i/o timeout)")
	}) {
		t.Errorf("no warning about lab-cp-1: %q", w)
	}
}

// Only a new VM could apply some changes to an existing node: they fail the
// preview and register nothing but what reading the nodes needs; a new
// template is for new nodes, and existing VMs keep their clone source.
func TestNoReplacementOfExistingNodes(t *testing.T) {
	t.Parallel()
	inv, first := existingCluster(t, baseInputs())

	virtio := baseInputs()
	virtio["diskInterface"] = "virtio"
	rec, _, err := constructDry(t, true, inv, virtio, appliedConfigs(first))
	if err == nil || !strings.Contains(err.Error(), "diskInterface: the OS disk of nodes lab-cp-1, lab-cp-2, lab-cp-3, lab-workers-1, lab-workers-2 is on the scsi bus and would move to virtio") {
		t.Errorf("scsi to virtio: %v", err)
	}
	if n := len(rec.byType("VirtualMachine")); n != 0 {
		t.Errorf("a refused change registered %d VMs", n)
	}

	tmpl := baseInputs()
	tmpl["image"] = map[string]any{"template": map[string]any{"vmId": 9000}}
	if _, _, err = constructDry(t, true, inv, tmpl, appliedConfigs(first)); err == nil || !strings.Contains(err.Error(), "booted the Talos ISO and would be cloned from a template instead") {
		t.Errorf("ISO to template: %v", err)
	}

	cloned, _, err := construct(t, &fakeInventory{hosts: threeHosts()}, tmpl)
	must(t, err)
	inv = &fakeInventory{hosts: threeHosts(), vms: observedFrom(t, cloned)}
	newer := baseInputs()
	newer["image"] = map[string]any{"template": map[string]any{"vmId": 9001}}
	newer["workerPools"] = []any{map[string]any{"name": "workers", "count": 3}}
	rec, resp, err := constructDry(t, true, inv, newer, appliedConfigs(cloned))
	must(t, err)
	for _, vm := range rec.byType("VirtualMachine") {
		existing := vm.name != "lab-workers-3"
		if got := slices.Equal(vm.ignore, []string{"clone"}); got != existing {
			t.Errorf("%s ignores changes of %v (existing: %v)", vm.name, vm.ignore, existing)
		}
	}
	if id := rec.get(t, "VirtualMachine", "lab-workers-3").inputs.Get("clone").AsMap().Get("vmId").AsNumber(); id != 9001 {
		t.Errorf("new worker cloned from %v, want 9001", id)
	}
	if s := resp.State.Get("summary").AsString(); s != "1 added: lab-workers-3" {
		t.Errorf("new template: summary %q", s)
	}
}

// A VM found stopped (a start that failed, stopped outside Pulumi) is
// started first: its step waits for nothing, its stage waits for it, the
// stages do not require it, the final check runs again, and the preview
// says so per node and with etcd's quorum.
func TestStoppedVMsAreRepairedFirst(t *testing.T) {
	t.Parallel()
	inv, first := existingCluster(t, baseInputs())
	running := appliedConfigs(first)
	down := map[string]bool{"lab-cp-2": true, "lab-cp-3": true, "lab-workers-1": true}
	for i := range inv.vms {
		if down[inv.vms[i].Name] {
			inv.vms[i].Status = "stopped"
			delete(running, addressOfVM(inv.vms[i]))
		}
	}

	// Nothing answers at a stopped VM's address: a preview that asked it
	// would wait readTimeout for it (issue 10), so it is not asked.
	var mu sync.Mutex
	var asked []string
	read := func(ctx context.Context, node string, creds *talosapi.Credentials) (runningNode, error) {
		mu.Lock()
		asked = append(asked, node)
		mu.Unlock()
		return running.read(ctx, node, creds)
	}
	rec, resp, err := constructReading(t, true, inv, baseInputs(), read, running.members)
	must(t, err)
	for _, vm := range inv.vms {
		switch was := slices.Contains(asked, addressOfVM(vm)); {
		case down[vm.Name] && was:
			t.Errorf("the preview asked stopped %s what it runs (asked: %v)", vm.Name, asked)
		case !down[vm.Name] && !was:
			t.Errorf("the preview did not ask running %s what it runs (asked: %v)", vm.Name, asked)
		}
	}
	want := "3 started first (VM stopped): lab-cp-2, lab-cp-3, lab-workers-1; etcd: 1 of 3 control planes running (lab-cp-2, lab-cp-3 not), " +
		"quorum lost: the cluster accepts no change until a majority runs"
	if s := resp.State.Get("summary").AsString(); s != want {
		t.Errorf("preview summary %q\nwant %q", s, want)
	}
	for name := range down {
		vm := rec.get(t, "VirtualMachine", name)
		if a := appliesIn(vm.deps); len(a) > 0 {
			t.Errorf("stopped %s's VM waits for %v", name, a)
		}
	}
	if vm := rec.get(t, "VirtualMachine", "lab-workers-2"); !depends(vm, "ConfigurationApply::lab-workers-1") {
		t.Errorf("running lab-workers-2's VM does not roll behind lab-workers-1: %v", vm.deps)
	}
	if st := rec.get(t, "ControlPlaneComponents", "lab-cp-2-components"); !depends(st, "VirtualMachine::lab-cp-2") {
		t.Errorf("stopped lab-cp-2's stage does not wait for its VM: %v", st.deps)
	}
	g := rec.get(t, "ControlPlaneComponents", "lab-cp-1-components").inputs.Get("healthGate").AsMap()
	if cps, w := strs(g.Get("controlPlanes")), strs(g.Get("workers")); !slices.Equal(cps, []string{"10.0.0.10"}) || !slices.Equal(w, []string{"10.0.0.14"}) {
		t.Errorf("stage gate requires control planes %v, workers %v: want only the nodes that run", cps, w)
	}
	h := rec.get(t, "ClusterHealth", "lab-healthy")
	if r := h.inputs.Get("recheck").AsString(); r != "VMs that were not running or missing: lab-cp-2, lab-cp-3, lab-workers-1" {
		t.Errorf("final check recheck %q", r)
	}
}

func addressOfVM(vm plan.ObservedVM) string {
	a, _, _ := strings.Cut(vm.NICs[0].Address, "/")
	return a
}

// appliesIn are the node steps among deps (an ISO download is no node's).
func appliesIn(deps []string) []string {
	var out []string
	for _, d := range deps {
		if !strings.HasPrefix(d, "DownloadFile::") && !strings.HasPrefix(d, "ImageFactorySchematic::") {
			out = append(out, d)
		}
	}
	return out
}

// knownAs answers the cluster's own view of its nodes.
func knownAs(m map[string]string) membersReader {
	return func(context.Context, []string, *talosapi.Credentials) (map[string]string, error) { return m, nil }
}

// A VM deleted outside Pulumi, whose node the cluster still knows, is
// created again at its address (not as a new node, not as an update): its
// VM waits for nothing, and the preview says so per node.
func TestDeletedVMIsCreatedAgain(t *testing.T) {
	t.Parallel()
	inv, first := existingCluster(t, baseInputs())
	running := appliedConfigs(first)
	known, _ := running.members(context.Background(), nil, nil)
	inv.vms = slices.DeleteFunc(inv.vms, func(vm plan.ObservedVM) bool { return vm.Name == "lab-workers-1" })
	delete(running, "10.0.0.13")

	rec, resp, err := constructKnown(t, true, inv, baseInputs(), running, knownAs(known))
	must(t, err)
	if s := resp.State.Get("summary").AsString(); s != "1 created again (VM deleted outside Pulumi): lab-workers-1" {
		t.Errorf("summary %q", s)
	}
	vm := rec.get(t, "VirtualMachine", "lab-workers-1")
	ip := vm.inputs.Get("cloudInit").AsMap().Get("ipConfigs").AsArray().Get(0).AsMap().Get("ipv4").AsMap().Get("address").AsString()
	if ip != "10.0.0.13/24" {
		t.Errorf("the new VM gets %s, want the node's address 10.0.0.13/24", ip)
	}
	if a := appliesIn(vm.deps); len(a) > 0 {
		t.Errorf("the new VM waits for %v", a)
	}
	if warnings := strs(resp.State.Get("warnings")); !slices.Contains(warnings, "lab-workers-1: VM missing (deleted outside Pulumi), will be created again at 10.0.0.13 and rejoin the cluster") {
		t.Errorf("warnings %v", warnings)
	}
}

// A VM on a Proxmox node that is offline: its configuration is not read
// (that would wait for the node), the node keeps its address (the cluster
// knows it), the preview shows it unknown, and an update refuses to change
// anything.
func TestOfflineHostNodesAreUnknown(t *testing.T) {
	t.Parallel()
	inv, first := existingCluster(t, baseInputs())
	running := appliedConfigs(first)
	known, _ := running.members(context.Background(), nil, nil)
	var host string
	for i, vm := range inv.vms {
		if vm.Name == "lab-cp-2" {
			host = vm.Host
			inv.vms[i] = plan.ObservedVM{VMID: vm.VMID, Host: vm.Host, Name: vm.Name, Tags: vm.Tags, Status: "unknown", ConfigUnknown: true}
		}
	}
	delete(running, "10.0.0.11")

	rec, resp, err := constructKnown(t, true, inv, baseInputs(), running, knownAs(known))
	must(t, err)
	want := "1 unknown (Proxmox node offline or not answering, not checked): lab-cp-2; etcd: 2 of 3 control planes running (lab-cp-2 not), quorum kept"
	if s := resp.State.Get("summary").AsString(); s != want {
		t.Errorf("summary %q\nwant %q", s, want)
	}
	if a := rec.get(t, "ConfigurationApply", "lab-cp-2").inputs.Get("node").AsString(); a != "10.0.0.11" {
		t.Errorf("lab-cp-2 is planned at %s, want its address 10.0.0.11", a)
	}

	_, _, err = constructKnown(t, false, inv, baseInputs(), running, knownAs(known))
	if err == nil || !strings.Contains(err.Error(), "Proxmox node "+host+" is offline: lab-cp-2 (VM") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Errorf("update with a node on an offline host: %v", err)
	}
}

// A VM found paused (Proxmox's "Pause", or its guest suspended itself) does
// not run either: it is not asked what it runs (a paused guest answers
// nothing), the preview says it will be resumed, and etcd's count leaves it
// out.
func TestPausedVMsAreResumedFirst(t *testing.T) {
	t.Parallel()
	inv, first := existingCluster(t, baseInputs())
	running := appliedConfigs(first)
	var asked []string
	var mu sync.Mutex
	read := func(ctx context.Context, node string, creds *talosapi.Credentials) (runningNode, error) {
		mu.Lock()
		asked = append(asked, node)
		mu.Unlock()
		return running.read(ctx, node, creds)
	}
	var pausedAt string
	for i := range inv.vms {
		if inv.vms[i].Name == "lab-cp-3" {
			inv.vms[i].Status = "paused"
			pausedAt = addressOfVM(inv.vms[i])
		}
	}
	_, resp, err := constructReading(t, true, inv, baseInputs(), read, running.members)
	must(t, err)
	if slices.Contains(asked, pausedAt) || len(asked) != 4 {
		t.Errorf("asked %v; the paused lab-cp-3 is at %s", asked, pausedAt)
	}
	want := "1 resumed first (VM paused): lab-cp-3; etcd: 2 of 3 control planes running (lab-cp-3 not), quorum kept"
	if s := resp.State.Get("summary").AsString(); s != want {
		t.Errorf("preview summary %q\nwant %q", s, want)
	}
}

// A control plane VM deleted outside Pulumi and created again in a
// Kubernetes upgrade: its component stage waits for the new VM, and the
// stage's early end of waits watches that VM's id (its vmId output), not
// an id the plan knew, which the new VM need not get (review finding 1;
// before, the plan knew no id for it and the node was not watched at all).
// The other nodes the stage requires keep the ids Proxmox shows.
func TestStageWatchesTheVMItWaitsFor(t *testing.T) {
	t.Parallel()
	old := baseInputs()
	old["kubernetesVersion"] = "v1.34.1"
	inv, first := existingCluster(t, old)
	running := appliedConfigs(first)
	known, _ := running.members(context.Background(), nil, nil)
	inv.vms = slices.DeleteFunc(inv.vms, func(vm plan.ObservedVM) bool { return vm.Name == "lab-cp-2" })
	delete(running, "10.0.0.11")

	next := baseInputs()
	next["kubernetesVersion"] = "v1.35.2"
	rec, _, err := constructKnown(t, false, inv, next, running, knownAs(known))
	must(t, err)
	stage := rec.get(t, "ControlPlaneComponents", "lab-cp-2-components")
	if !depends(stage, "VirtualMachine::lab-cp-2") {
		t.Fatalf("lab-cp-2's stage does not wait for its new VM: %v", stage.deps)
	}
	ids := stage.inputs.Get("vmIds").AsMap()
	if got, want := ids.Get("10.0.0.11"), rec.get(t, "VirtualMachine", "lab-cp-2").outputs.Get("vmId"); !got.Equals(want) {
		t.Errorf("lab-cp-2's stage watches VM %v for its node, want its new VM %v (vmIds %v)", got, want, ids)
	}
	for _, vm := range inv.vms {
		if got := ids.Get(addressOfVM(vm)); got.AsNumber() != float64(vm.VMID) {
			t.Errorf("lab-cp-2's stage watches VM %v for %s, want %d", got, vm.Name, vm.VMID)
		}
	}
}
