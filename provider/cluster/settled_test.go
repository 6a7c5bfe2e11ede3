package cluster

import (
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

// Right after a create, a no-op preview and a no-op update register every
// resource as the create did (inputs and dependencies; in the preview the
// applies' and stages' checked inputs): the Pulumi CLI, which writes the
// whole state after any step whose registration differs from the state,
// even in a preview, writes nothing (issue 14).
func TestNoopAfterCreateRegistersAsCreated(t *testing.T) {
	t.Parallel()
	s := newSettledCluster(t, baseInputs())
	state := checkedStates(t, s.create, nil)
	for _, dryRun := range []bool{true, false} {
		rec, _, err := s.construct(t, dryRun, baseInputs())
		must(t, err)
		if dryRun {
			for key, got := range checkedStates(t, rec, state) {
				for _, k := range differingKeys(got, state[key]) {
					t.Errorf("preview: %s checked inputs differ from the state at %s: %v, state %v", key, k, got.Get(k), state[key].Get(k))
				}
			}
		}
		for _, c := range s.create.regs {
			r := rec.get(t, c.typ, c.name)
			if !slices.Equal(r.deps, c.deps) {
				t.Errorf("dryRun %v: %s depends on %v, its create on %v", dryRun, c.key(), r.deps, c.deps)
			}
			if !dryRun && !r.inputs.Equals(c.inputs) {
				t.Errorf("%s inputs differ from its create's:\n%v\n%v", c.key(), r.inputs, c.inputs)
			}
		}
	}
}

// Every TalosCluster input that reaches a node's VirtualMachine or
// ConfigurationApply: a node whose registration differs from what its
// create stored (the state) is not settled. Its gate is the rollout's (no
// clusterCreate) and its VM waits for the change before it, so that it
// changes in its turn, gated (review s13 items 1 and 5: a diskStorage
// change settled every node and moved every VM's disks at once).
func TestNodesWhoseRegistrationChangesAreNotSettled(t *testing.T) {
	t.Parallel()
	s := newSettledCluster(t, baseInputs())
	setHosts := func(key string, v any) func(map[string]any) {
		return func(in map[string]any) {
			for _, h := range in["hosts"].([]any) {
				h.(map[string]any)[key] = v
			}
		}
	}
	setNetwork := func(key string, v any) func(map[string]any) {
		return func(in map[string]any) { in["network"].(map[string]any)[key] = v }
	}
	setPool := func(key string, v any) func(map[string]any) {
		return func(in map[string]any) { in["workerPools"].([]any)[0].(map[string]any)[key] = v }
	}
	cases := map[string]func(map[string]any){
		"hosts[].diskStorage":        setHosts("diskStorage", "ceph"),
		"hosts[].isoStorage":         setHosts("isoStorage", "isos"),
		"vm.tags":                    func(in map[string]any) { in["vm"] = map[string]any{"tags": []any{"team-a"}} },
		"vm.onBoot":                  func(in map[string]any) { in["vm"] = map[string]any{"onBoot": false} },
		"vm.cpuType":                 func(in map[string]any) { in["vm"] = map[string]any{"cpuType": "host"} },
		"workerPools[].size.cores":   setPool("size", map[string]any{"cores": 4}),
		"workerPools[].size.memory":  setPool("size", map[string]any{"memory": 8192}),
		"workerPools[].size.disk":    setPool("size", map[string]any{"diskSize": 40}),
		"workerPools[].dataDisks":    setPool("dataDisks", []any{map[string]any{"size": 10}}),
		"workerPools[].patches":      setPool("patches", []any{"machine:\n  env:\n    A: b\n"}),
		"network.dnsServers":         setNetwork("dnsServers", []any{"10.0.0.2"}),
		"network.searchDomain":       setNetwork("searchDomain", "lab.example"),
		"network.mtu":                setNetwork("mtu", 9000),
		"network.vlan":               setNetwork("vlan", 20),
		"network.bridge":             setNetwork("bridge", "vmbr1"),
		"network.secondary":          setNetwork("secondary", map[string]any{"bridge": "vmbr2"}),
		"patches":                    func(in map[string]any) { in["patches"] = []any{"machine:\n  env:\n    A: b\n"} },
		"talosVersion":               func(in map[string]any) { in["talosVersion"] = "v1.12.6" },
		"kubernetesVersion":          func(in map[string]any) { in["kubernetesVersion"] = "v1.35.3" },
		"controlPlane.size.cores":    func(in map[string]any) { in["controlPlane"] = map[string]any{"size": map[string]any{"cores": 4}} },
		"allowSchedulingOnControlPl": func(in map[string]any) { in["allowSchedulingOnControlPlanes"] = true },
	}
	// Each layer of the decision alone must catch its rows, the providers'
	// conditions every one (review s14b S4). The plan's summary does not show
	// a change of the configuration text alone (summaryOut learns that from
	// the nodes later).
	textOnly := map[string]bool{"patches": true, "workerPools[].patches": true, "allowSchedulingOnControlPl": true}
	for _, layer := range []string{"summary", "providers"} {
		s := *s
		s.onlyLayer = layer
		for name, change := range cases {
			if layer == "summary" && textOnly[name] {
				continue
			}
			in := baseInputs()
			change(in)
			rec, _, err := s.construct(t, false, in)
			if err != nil {
				t.Errorf("%s alone, %s: %v", layer, name, err)
				continue
			}
			changed := 0
			for _, c := range s.create.byType("VirtualMachine") {
				vm, apply, created := rec.get(t, "VirtualMachine", c.name), rec.get(t, "ConfigurationApply", c.name), s.create.get(t, "ConfigurationApply", c.name)
				gate, createdGate := apply.inputs.Get("healthGate").AsMap(), created.inputs.Get("healthGate").AsMap()
				if vm.inputs.Equals(c.inputs) && apply.inputs.Get("machineConfiguration").Equals(created.inputs.Get("machineConfiguration")) &&
					gate.Get("vm").Equals(createdGate.Get("vm")) {
					continue
				}
				changed++
				if gate.Get("clusterCreate").IsBool() {
					t.Errorf("%s alone, %s: changing %s's gate is its create's (clusterCreate): %v", layer, name, c.name, gate)
				}
				if c.name != "lab-cp-1" && len(appliesIn(vm.deps)) == 0 {
					t.Errorf("%s alone, %s: changing %s's VM waits for no change before it: %v", layer, name, c.name, vm.deps)
				}
			}
			// An existing node keeps the ISO it boots from (only new nodes use
			// the new storage): nothing of it changes.
			if changed == 0 && name != "hosts[].isoStorage" {
				t.Errorf("%s: no node's registration changed (the case tests nothing)", name)
			}
		}
	}
}

// What only the providers' conditions see, since the plan's summary does
// not show it: a VM changed in Proxmox (its Diff after a refresh finds the
// change), a stored gate that lacks a setting the gate now names (the
// apply's Check compares gates: vmChangedByCheck). The node is not settled,
// the others are.
func TestNodesTheSummaryMissesAreNotSettled(t *testing.T) {
	t.Parallel()
	cases := map[string]func(*settledCluster){
		"onboot flipped in Proxmox": func(s *settledCluster) {
			for i := range s.inv.vms {
				if s.inv.vms[i].Name == "lab-workers-1" {
					s.inv.vms[i].Config["onboot"] = "0"
				}
			}
		},
		// a refresh gives the VM's smbiosUuid output, which the apply's
		// machineId is bound to, the new UUID: the apply is replaced
		"SMBIOS UUID changed in Proxmox": func(s *settledCluster) {
			for i := range s.inv.vms {
				if s.inv.vms[i].Name == "lab-workers-1" {
					s.inv.vms[i].Config["smbios1"] = "uuid=11111111-2222-4333-8444-555555555555"
				}
			}
		},
		// its update failed part-way: the engine runs it again whatever
		// Diff says (init errors, which readStack does not return)
		"VM status unknown (its last update failed)": func(s *settledCluster) {
			for urn, r := range s.state {
				if strings.HasSuffix(urn, "VirtualMachine::lab-workers-1") {
					r.(map[string]any)["outputs"].(map[string]any)["status"] = "unknown"
				}
			}
		},
		"stored gate.vm without diskStorage": func(s *settledCluster) {
			for urn, r := range s.state {
				if strings.HasSuffix(urn, "ConfigurationApply::lab-workers-1") {
					gate := r.(map[string]any)["outputs"].(map[string]any)["healthGate"].(map[string]any)
					gate["vm"] = strings.Join(slices.DeleteFunc(strings.Fields(gate["vm"].(string)), func(f string) bool {
						return strings.HasPrefix(f, "diskStorage=")
					}), " ")
				}
			}
		},
	}
	for name, change := range cases {
		s := newSettledCluster(t, baseInputs())
		change(s)
		rec, _, err := s.construct(t, false, baseInputs())
		must(t, err)
		if gate := rec.get(t, "ConfigurationApply", "lab-workers-1").inputs.Get("healthGate").AsMap(); gate.Get("clusterCreate").IsBool() {
			t.Errorf("%s: lab-workers-1 is settled: %v", name, gate)
		}
		if gate := rec.get(t, "ConfigurationApply", "lab-workers-2").inputs.Get("healthGate").AsMap(); !gate.Get("clusterCreate").IsBool() {
			t.Errorf("%s: lab-workers-2 is not settled (the case tests nothing)", name)
		}
	}
}

// A control plane's stage whose last update failed part-way (no outcome)
// runs again whatever its Diff says (init errors): the stages keep the
// rollout's shape, gated (review s14b S1).
func TestUnfinishedStageIsNotSettled(t *testing.T) {
	t.Parallel()
	s := newSettledCluster(t, baseInputs())
	rec, _, err := s.construct(t, false, baseInputs())
	must(t, err)
	if g := rec.get(t, "ControlPlaneComponents", "lab-cp-2-components").inputs.Get("healthGate"); g.IsMap() {
		t.Fatalf("settled stages are gated (the test tests nothing): %v", g)
	}
	for urn, r := range s.state {
		if strings.HasSuffix(urn, "ControlPlaneComponents::lab-cp-2-components") {
			r.(map[string]any)["outputs"].(map[string]any)["outcome"] = ""
		}
	}
	rec, _, err = s.construct(t, false, baseInputs())
	must(t, err)
	if g := rec.get(t, "ControlPlaneComponents", "lab-cp-2-components").inputs.Get("healthGate"); !g.IsMap() {
		t.Errorf("a stage whose last update failed is settled: %v", rec.get(t, "ControlPlaneComponents", "lab-cp-2-components").inputs)
	}
}

// A pool scaled down by one: no node is settled (a removal writes the
// state anyway) and the workers that stay still change one at a time.
func TestScaleDownSettlesNothing(t *testing.T) {
	t.Parallel()
	in := baseInputs()
	in["workerPools"].([]any)[0].(map[string]any)["count"] = 3
	s := newSettledCluster(t, in)
	in = baseInputs()
	rec, _, err := s.construct(t, false, in)
	must(t, err)
	for _, a := range rec.byType("ConfigurationApply") {
		if a.inputs.Get("healthGate").AsMap().Get("clusterCreate").IsBool() {
			t.Errorf("%s is settled in a scale-down", a.name)
		}
	}
	if a := rec.get(t, "ConfigurationApply", "lab-workers-2"); !depends(a, "ConfigurationApply::lab-workers-1") {
		t.Errorf("lab-workers-2's apply does not wait for lab-workers-1's: %v", a.deps)
	}
}

// After an update that changed every node (its state in the rollout's
// shape), the next no-op update settles them back to the create's shape:
// each apply's Check accepts that (no gate list dropped) and the preview
// after it matches the state again.
func TestSettlingAfterARolloutChecks(t *testing.T) {
	t.Parallel()
	s := newSettledCluster(t, baseInputs())
	state := checkedStates(t, s.create, nil)
	in := baseInputs()
	in["patches"] = []any{"machine:\n  env:\n    HTTP_PROXY: http://proxy:3128\n"}
	changed, _, err := s.construct(t, false, in)
	must(t, err)
	if a := changed.get(t, "ConfigurationApply", "lab-workers-2"); a.inputs.Get("healthGate").AsMap().Get("clusterCreate").IsBool() {
		t.Fatal("the changed lab-workers-2 was settled")
	}
	state = checkedStates(t, changed, state)
	s.running, s.state = appliedConfigs(changed), lastStackOf(t, changed)

	settle, _, err := s.construct(t, false, in)
	must(t, err)
	if a := settle.get(t, "ConfigurationApply", "lab-workers-2"); !a.inputs.Get("healthGate").AsMap().Get("clusterCreate").IsBool() {
		t.Errorf("lab-workers-2 is not settled after its change: %v", a.inputs.Get("healthGate"))
	}
	state = checkedStates(t, settle, state) // fails on a Check failure
	s.state = lastStackOf(t, settle)
	preview, _, err := s.construct(t, true, in)
	must(t, err)
	for key, got := range checkedStates(t, preview, state) {
		for _, k := range differingKeys(got, state[key]) {
			if k != "configView" && k != "configChange" {
				t.Errorf("%s checked inputs differ from the state at %s: %v, state %v", key, k, got.Get(k), state[key].Get(k))
			}
		}
	}
}

// A node whose last operation did not finish (its apply's state
// unverified: the update checks it again) or whose state names another
// installer image is not settled: its apply's Update would run (review s13
// item 3); the others still are.
func TestUnverifiedNodesAreNotSettled(t *testing.T) {
	t.Parallel()
	for field, value := range map[string]any{"configDigest": "", "installedImage": "factory.talos.dev/installer/x:v1.12.4"} {
		s := newSettledCluster(t, baseInputs())
		for urn, r := range s.state {
			if strings.HasSuffix(urn, "ConfigurationApply::lab-workers-1") {
				r.(map[string]any)["outputs"].(map[string]any)[field] = value
			}
		}
		rec, _, err := s.construct(t, false, baseInputs())
		must(t, err)
		if gate := rec.get(t, "ConfigurationApply", "lab-workers-1").inputs.Get("healthGate").AsMap(); gate.Get("clusterCreate").IsBool() {
			t.Errorf("%s %q: lab-workers-1 is settled: %v", field, value, gate)
		}
		if gate := rec.get(t, "ConfigurationApply", "lab-workers-2").inputs.Get("healthGate").AsMap(); !gate.Get("clusterCreate").IsBool() {
			t.Errorf("%s %q: lab-workers-2 is not settled", field, value)
		}
		if a := rec.get(t, "ConfigurationApply", "lab-workers-2"); !depends(a, "ConfigurationApply::lab-workers-1") {
			t.Errorf("%s %q: settled lab-workers-2's apply does not come after lab-workers-1's: %v", field, value, a.deps)
		}
	}
}

// A provider upgrade that adds keys to healthGate.vm (diskStorage,
// dataDisks, or any later one) meets applies whose stored gate lacks them.
// Such a node is not settled in the first update after it (the case
// "stored gate.vm without diskStorage" above); its apply's Diff reports
// the state-only update that records the gate, so the update after it
// settles every node again (review s14c S3: a no-op up kept the old
// outputs, and no node was ever settled again).
func TestNodesWithAnOldGateSettleAfterOneUpdate(t *testing.T) {
	t.Parallel()
	s := newSettledCluster(t, baseInputs())
	// the gates as a provider before the keys stored them, in the outputs
	// and in the last inputs (no up since the upgrade)
	strip := func(vm string) string {
		return strings.Join(slices.DeleteFunc(strings.Fields(vm), func(f string) bool {
			return strings.HasPrefix(f, "diskStorage=") || strings.HasPrefix(f, "dataDisks=") || strings.HasPrefix(f, "diskSize=")
		}), " ")
	}
	for _, r := range s.state {
		if gate, ok := r.(map[string]any)["outputs"].(map[string]any)["healthGate"].(map[string]any); ok {
			gate["vm"] = strip(gate["vm"].(string))
		}
	}
	oldInputs := checkedStates(t, s.create, nil)
	for key, in := range oldInputs {
		if gate := in.Get("healthGate"); gate.IsMap() {
			oldInputs[key] = in.Set("healthGate", property.New(gate.AsMap().Set("vm", property.New(strip(gate.AsMap().Get("vm").AsString())))))
		}
	}

	rec, _, err := s.construct(t, false, baseInputs())
	must(t, err)
	for _, a := range rec.byType("ConfigurationApply") {
		if a.inputs.Get("healthGate").AsMap().Get("clusterCreate").IsBool() {
			t.Errorf("%s is settled with a gate that lacks keys", a.name)
		}
	}
	var updated []string
	s.state, updated = applySteps(t, rec, s.state, oldInputs)
	if len(updated) != len(rec.byType("ConfigurationApply")) {
		t.Fatalf("the update records the gate of %v, want every apply's", updated)
	}

	rec, _, err = s.construct(t, false, baseInputs())
	must(t, err)
	for _, a := range rec.byType("ConfigurationApply") {
		if !a.inputs.Get("healthGate").AsMap().Get("clusterCreate").IsBool() {
			t.Errorf("%s is not settled after the update that recorded its gate", a.name)
		}
	}
}
