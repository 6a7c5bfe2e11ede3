package talos

import (
	"fmt"
	"regexp"
	"strconv"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
)

// recordCounts reads the counts of a gateLists record (gateLists.record).
var recordCounts = regexp.MustCompile(`^(\d+) workers?, (\d+) other nodes?, (\d+) VMIDs?: sha256:`)

// droppedLists fails inputs that lack lists the last accepted inputs' gate
// had (old holds their gateLists record). The engine applies
// `ignoreChanges` before Check, from the old inputs, which no longer hold
// the lists (gate_lists.go): `ignoreChanges: ["healthGate"]` or
// `["vmIds"]` would silently shrink the gate to its control planes, or
// stop watching the other nodes' VMs. TalosCluster always sends both lists
// (empty ones too), and the VMIDs of the nodes a gate requires, so it
// never trips this.
func (in gateInputs) droppedLists(old, raw property.Map) []p.CheckFailure {
	rec := old.Get("gateLists")
	if !rec.IsString() || *in.gate == nil || in.namedByRecord(raw) {
		return nil
	}

	m := recordCounts.FindStringSubmatch(rec.AsString())
	if m == nil {
		return nil
	}

	workers, _ := strconv.Atoi(m[1]) //nolint:errcheck // digits
	others, _ := strconv.Atoi(m[2])  //nolint:errcheck // digits
	ids, _ := strconv.Atoi(m[3])     //nolint:errcheck // digits

	const advice = "ignoreChanges cannot keep these lists: the state does not store them (gateLists only). " +
		"Pass them explicitly (an empty list if there are none), or remove the field from ignoreChanges"

	var fails []p.CheckFailure

	gate := raw.Get("healthGate")
	for _, l := range []struct {
		key, what string
		n         int
	}{{"workers", "worker", workers}, {"otherNodes", "other node", others}} {
		if !gate.IsMap() || l.n == 0 {
			continue
		}

		if v, ok := gate.AsMap().GetOk(l.key); !ok || v.IsNull() {
			fails = append(fails, p.CheckFailure{Property: "healthGate." + l.key, Reason: fmt.Sprintf(
				"the last update's health gate of node %s named %s (healthGate.%s), these inputs none: %s",
				in.node, plural(l.n, l.what), l.key, advice)})
		}
	}

	oldOwn := len(ownVMIDs(vmIDsOf(old), in.node))
	if v := raw.Get("vmIds"); ids > oldOwn && !v.HasComputed() && in.requiresOthers() &&
		len(ownVMIDs(*in.vmIds, in.node)) == len(*in.vmIds) {
		fails = append(fails, p.CheckFailure{Property: "vmIds", Reason: fmt.Sprintf(
			"the last update's vmIds of node %s held the VMIDs of %s its health gate requires, these inputs "+
				"only the node's own: %s", in.node, plural(ids-oldOwn, "other node"), advice)})
	}

	return fails
}

// namedByRecord: the inputs name the gate's lists by a gateLists of their
// own and hold none, nor a VMID but the node's own: the shape of moved
// inputs, which TalosCluster's preview of an existing node sends
// (PreviewGateLists) and Check keeps as it is (moveOut). ignoreChanges
// leaves that shape only when it names gateLists too (an output); a create
// or update of such inputs fails on the record its process does not hold
// (putBack), so nothing is waited on without its lists. The record is
// unknown when a VMID it is computed from is: in a preview that updates
// one of the gate's VMs (its outputs are unknown then).
func (in gateInputs) namedByRecord(raw property.Map) bool {
	g := *in.gate
	_, _, moves := movedLists(in.node, g.Workers, g.OtherNodes, *in.vmIds)
	rec := raw.Get("gateLists")

	return (rec.IsString() || rec.IsComputed()) && !moves
}

// requiresOthers: the gate requires nodes other than the node itself, whose
// VMIDs TalosCluster passes in vmIds.
func (in gateInputs) requiresOthers() bool {
	g := *in.gate
	for _, a := range append(append([]string(nil), g.ControlPlanes...), g.Workers...) {
		if !talosapi.SameHost(a, in.node) {
			return true
		}
	}

	return false
}

// vmIDsOf are the vmIds of inputs as a property map, by address.
func vmIDsOf(inputs property.Map) map[string]int {
	v := inputs.Get("vmIds")
	if !v.IsMap() {
		return nil
	}

	out := map[string]int{}
	for addr, id := range v.AsMap().All {
		if id.IsNumber() {
			out[addr] = int(id.AsNumber())
		}
	}

	return out
}
