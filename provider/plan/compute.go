package plan

import (
	"fmt"
	"net/netip"
	"slices"
)

// builder carries one Compute call's inputs, problems and partial results.
type builder struct {
	spec  Spec
	facts Facts
	prev  *State
	probs problems

	slots []*slot
	plan  Plan

	// Resolved cluster-wide inputs.
	endpointHost string
	diskBus      string
	installDisk  string
	cpuType      string
	ccm          bool
	primary      *addrSpace
	secondary    *addrSpace
	vip          netip.Addr
	// Sizes with their defaults: the control planes' and each pool's.
	cpSize    hardware
	poolSizes []hardware
}

// Compute plans a cluster: it checks the spec, places every node on a host,
// gives it addresses and computes its machine configuration inputs. prev is
// the previous run's State (nil on the first run): existing nodes keep their
// host, addresses and VM id, and removed nodes are listed in Plan.Removed.
// Every problem found is returned at once in an *Error.
func Compute(spec Spec, facts Facts, prev *State) (*Plan, error) {
	if prev != nil && prev.Version != StateVersion {
		return nil, fmt.Errorf("plan.Compute: previous state has version %d, this provider reads version %d: upgrade the provider", prev.Version, StateVersion)
	}
	// The spec's slices are the caller's: copy what defaulting writes to.
	spec.WorkerPools = slices.Clone(spec.WorkerPools)
	b := &builder{spec: spec, facts: facts, prev: prev}
	b.plan.Warnings = []string{}

	b.checkCluster()
	b.checkHosts()
	b.checkSizes()
	b.expandNodes()
	b.checkLabelsAndPatches()
	b.checkDayTwo()
	if b.probs.any() {
		return nil, b.probs.err()
	}

	b.matchPrevious()
	b.checkReplacements()
	b.allocateAddresses()
	if b.probs.any() {
		return nil, b.probs.err()
	}
	b.place()
	if b.probs.any() {
		return nil, b.probs.err()
	}
	b.buildCluster()
	b.buildNodes()
	b.noteMembership()
	b.buildOrders()
	b.buildWaits()
	b.checkHostResources()
	b.checkVMIDs()
	if b.probs.any() {
		return nil, b.probs.err()
	}
	return &b.plan, nil
}

func (b *builder) warn(format string, args ...any) {
	b.plan.Warnings = append(b.plan.Warnings, fmt.Sprintf(format, args...))
}

// matchPrevious links each slot to its previous node by name.
func (b *builder) matchPrevious() {
	for _, s := range b.slots {
		s.prev = b.prev.node(s.name)
		if s.prev != nil && s.prev.Ordinal > 0 {
			s.ordinal = s.prev.Ordinal
		}
		if s.prev != nil && s.prev.Role != s.role {
			b.probs.add(s.field, "node %q was a %s and would become a %s: Talos cannot change a node's role in place; give the node another name", s.name, s.prev.Role, s.role)
		}
	}
}
