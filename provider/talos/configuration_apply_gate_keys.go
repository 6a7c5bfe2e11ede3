package talos

import (
	"slices"
	"strings"
	"sync"
)

// A provider that adds a key to healthGate.vm (TalosCluster's vmSettings:
// diskStorage, dataDisks, any later one) meets states whose gate was
// recorded without it. Such a key is no VM change (vmChanged: its old
// value is unknown), but LeavesNodeAlone needs the stored gate to name the
// same keys, and a `pulumi up` that changes nothing keeps the old outputs
// (pulumi pkg v3.274.1 resource/deploy/step.go SameStep.Apply: s.new.Outputs
// = s.old.Outputs): the node would never be settled again (issue 14's state
// writes on every no-op preview). So Diff reports an update that only
// records the current gate: Update finds no work on the node (needsNode),
// no VM change (vmChange, vmChangedByCheck) and only rewrites the state.

// gateKeysAdded are the keys of the inputs' healthGate.vm that the stored
// one lacks, in the inputs' order; none when either has no vm.
func gateKeysAdded(stored, in *HealthGate) []string {
	if stored == nil || in == nil || stored.Vm == nil || in.Vm == nil {
		return nil
	}

	have := vmFields(*stored.Vm)

	var out []string

	for _, k := range vmFields(*in.Vm).keys {
		if _, ok := have.values[k]; !ok {
			out = append(out, k)
		}
	}

	return out
}

// gateRefresh is Diff's note for an update that only records the gate's
// new keys. It is said once per provider process (one deployment), for
// the first node, not for each of a cluster's nodes: once names its keys.
func gateRefresh(in ConfigurationApplyArgs, keys []string) diffNote {
	return diffNote{once: "gate keys " + strings.Join(keys, " "), text: "node " + nodeLabel(in) + " and every other node " +
		"whose ConfigurationApply shows only healthGate.vm changing: state only, no node is touched (no apply, reboot " +
		"or health check). The health gate recorded for it was written by an older provider, without " +
		strings.Join(keys, ", ") + "; the update records the current one, once: afterwards the node shows no change"}
}

// onceNotes remembers the notes said already in this process.
type onceNotes struct {
	mu   sync.Mutex
	said []string
}

// first reports whether key was not said before, and marks it said.
func (o *onceNotes) first(key string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()

	if slices.Contains(o.said, key) {
		return false
	}

	o.said = append(o.said, key)

	return true
}

var saidNotes onceNotes
