package talos

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
)

// A health gate's lists of workers and other nodes, and the vmIds of its
// required nodes, name nodes across the whole cluster: with one gate per
// node, state and every no-op preview grew with the square of the
// cluster's size (issue 14: 57 other nodes per node at 60 nodes, moved
// several times per node per preview: Check's and Diff's old inputs,
// Diff's state, the registration's answer). Only the create or update that
// waits on them reads them, and it receives them as inputs in the same
// provider process whose Check accepted them just before: the engine sends
// Create and Update the inputs its Check returned, through the one provider
// of the deployment (pulumi/pkg v3.274.1 resource/deploy/step_generator.go:
// `new.Inputs = inputs` after prov.Check; step.go: CreateStep and
// UpdateStep send s.new.Inputs). So Check moves them out of the checked inputs into a
// process-wide store keyed by their digest, the checked inputs (and thus
// the state) keep only the digest (gateLists), the gate's control planes
// and the node's own VMID (what a refresh looks at), and the operation
// puts them back from the store before it waits. The nodes checked are
// exactly those of the inputs; a digest the store does not hold fails the
// operation before it touches the node.

// gateLists is what Check moves out of the inputs.
type gateLists struct {
	Workers    []string       `json:"workers,omitempty"`
	OtherNodes []string       `json:"otherNodes,omitempty"`
	VmIds      map[string]int `json:"vmIds,omitempty"` //nolint:revive // as the input
}

// record is the gateLists value: counts for a reader of the state or a
// preview, and the digest that names the lists (JSON sorts the map's keys,
// so equal lists give one digest).
func (l gateLists) record() string {
	raw, err := json.Marshal(l)
	if err != nil {
		panic(err) // strings and ints always marshal
	}

	sum := sha256.Sum256(raw)

	return fmt.Sprintf("%s, %s, %s: sha256:%s", plural(len(l.Workers), "worker"), plural(len(l.OtherNodes), "other node"),
		plural(len(l.VmIds), "VMID"), hex.EncodeToString(sum[:]))
}

// gateStore holds the lists Check moved, by record, for the life of the
// process. It is not bounded: a provider process serves one command, and
// holds one entry per distinct gate a Check accepted (a few KiB at 100
// nodes); evicting one would fail an update.
var gateStore = struct {
	sync.Mutex
	lists map[string]gateLists
}{lists: map[string]gateLists{}}

func storeGateLists(record string, l gateLists) {
	gateStore.Lock()
	defer gateStore.Unlock()

	gateStore.lists[record] = l
}

func loadGateLists(record string) (gateLists, bool) {
	gateStore.Lock()
	defer gateStore.Unlock()

	l, ok := gateStore.lists[record]

	return l, ok
}

// gateInputs are the fields of a resource's inputs that hold a gate and
// its lists.
type gateInputs struct {
	node   string
	gate   **HealthGate
	vmIds  *map[string]int
	record **string
}

// moveOut moves the lists out of checked inputs into the store and sets
// the record, when all of them are known (raw are the unchecked inputs; a
// preview has unknown ones: nothing to wait on then, and nothing moves) and
// there is something to move. Without a gate nothing moves: vmIds alone
// name the node's own VM and those of the nodes a resource waits for,
// which it reads from its state (a refresh).
//
// Inputs that give a gateLists and have nothing to move keep it: the shape
// of moved inputs, which TalosCluster's preview of an existing node sends
// (PreviewGateLists), so that the checked inputs equal
// the state the last update stored and a no-op preview writes nothing. Only
// a preview can use such inputs: a create or update finds no lists for the
// record in its process's store (putBack) and fails before it touches the
// node.
func (in gateInputs) moveOut(raw property.Map) {
	given := *in.record
	*in.record = nil

	g := *in.gate
	if g == nil {
		return
	}

	gate := raw.Get("healthGate")
	if !gate.IsMap() || gate.AsMap().Get("workers").HasComputed() || gate.AsMap().Get("otherNodes").HasComputed() ||
		raw.Get("vmIds").HasComputed() {
		return
	}

	if !in.move() {
		*in.record = given
	}
}

// move moves the lists of a known gate into the store and the record,
// false when there is nothing to move.
func (in gateInputs) move() bool {
	g := *in.gate
	l, kept, ok := movedLists(in.node, g.Workers, g.OtherNodes, *in.vmIds)
	if !ok {
		return false
	}

	record := l.record()
	storeGateLists(record, l)

	moved := *g
	moved.Workers, moved.OtherNodes = nil, nil
	*in.gate, *in.vmIds, *in.record = &moved, kept, &record

	return true
}

// movedLists are the lists a Check moves out of a node's gate and the
// vmIds it keeps; ok is false when there is nothing to move (no lists, no
// VMID but the node's own).
func movedLists(node string, workers, others []string, vmIds map[string]int) (l gateLists, kept map[string]int, ok bool) {
	if !GateListsMove(node, workers, others, slices.Collect(maps.Keys(vmIds))) {
		return gateLists{}, vmIds, false
	}

	return gateLists{Workers: workers, OtherNodes: others, VmIds: vmIds}, ownVMIDs(vmIds, node), true
}

// GateListsMove reports whether Check moves a gate's lists out of the
// inputs of node (they hold lists, or VMIDs of other hosts than the node's:
// vmIdAddrs are the keys of vmIds), which it decides before any VMID is
// known.
func GateListsMove(node string, workers, others, vmIdAddrs []string) bool { //nolint:revive // as the input
	if len(workers) > 0 || len(others) > 0 {
		return true
	}

	for _, a := range vmIdAddrs {
		if !talosapi.SameHost(a, node) {
			return true
		}
	}

	return false
}

// PreviewGateLists are, for a preview of an existing node whose gate's
// lists Check moves (GateListsMove), the gateLists and vmIds that Check
// keeps of the lists and vmIds an update would send, computed as Check
// computes them, without storing anything. Sent without the lists, they
// make the checked inputs equal the state (moveOut) and leave out the
// lists, which name nodes across the whole cluster (issue 14).
func PreviewGateLists(node string, workers, others []string, vmIds map[string]int) (record string, kept map[string]int) { //nolint:revive // as the input
	l, kept, _ := movedLists(node, workers, others, vmIds)

	return l.record(), kept
}

// ownVMIDs are the entries of vmIds for the node's own host, the ones a
// refresh of the node asks about (vmwatch keys VMs by host); nil for none.
func ownVMIDs(vmIds map[string]int, node string) map[string]int {
	var own map[string]int

	for addr, id := range vmIds {
		if talosapi.SameHost(addr, node) {
			if own == nil {
				own = map[string]int{}
			}

			own[addr] = id
		}
	}

	return own
}

// putBack puts the lists the record names back into inputs an operation
// waits with, without changing the gate the state keeps (a copy). An
// error when the store does not hold them: this process did not check
// these inputs, so the operation must not guess the nodes. Check stores
// the lists of every input that holds them, so such inputs gave only the
// record: a user's gateLists, or `ignoreChanges` naming gateLists with the
// lists' fields (the engine then sends the old inputs' record). Another
// `pulumi up` sends the same inputs, so the error does not advise it.
func (in gateInputs) putBack(label string) error {
	if *in.record == nil {
		return nil
	}

	l, ok := loadGateLists(**in.record)
	if !ok || *in.gate == nil {
		return fmt.Errorf("node %s was not changed: its inputs name the health gate's lists only by gateLists (%q), "+
			"which this provider process has no lists for (only a preview can use such inputs). Remove gateLists from "+
			"the resource's ignoreChanges (it is an output; do not set it yourself) and pass healthGate and vmIds; "+
			"running `pulumi up` again would fail the same way", label, **in.record)
	}

	g := **in.gate
	g.Workers, g.OtherNodes = l.Workers, l.OtherNodes
	*in.gate, *in.vmIds = &g, maps.Clone(l.VmIds)

	return nil
}

func (a *ConfigurationApplyArgs) gateInputs() gateInputs {
	return gateInputs{node: a.Node, gate: &a.HealthGate, vmIds: &a.VmIds, record: &a.GateLists}
}

func (a *ControlPlaneComponentsArgs) gateInputs() gateInputs {
	return gateInputs{node: a.Node, gate: &a.HealthGate, vmIds: &a.VmIds, record: &a.GateLists}
}
