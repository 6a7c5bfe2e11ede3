package plan

import (
	"net/netip"
	"regexp"
	"strings"
)

// slot is one node being planned: its stable identity (pool + ordinal, or
// an explicit name) and the spec parts that apply to it.
type slot struct {
	name    string
	role    Role
	pool    string
	ordinal int
	// field is the input path of the node's explicit entry, or of the
	// pool's count when the node comes from a count.
	field     string
	explicit  NodeSpec
	listed    bool // from a nodes list rather than a count
	poolIndex int  // index in spec.WorkerPools; -1 for control planes
	size      hardware
	dataDisks []DataDisk
	prev      *NodeState

	// Filled in by the later phases.
	address, secondary string // addresses without prefix
	host               string
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// checkDNSLabel reports whether s is a lowercase RFC 1123 label.
func checkDNSLabel(s string) bool {
	return len(s) <= 63 && dnsLabel.MatchString(s)
}

// defaultNodeName is the stable identity of a counted node.
func defaultNodeName(cluster, pool string, ordinal int) string {
	return cluster + "-" + pool + "-" + itoa(ordinal)
}

// expandNodes lists every node of the spec in canonical order. Nodes of a
// count are named <cluster>-<pool>-<ordinal>, so scaling a pool adds or
// removes the highest ordinals and never renames the others.
func (b *builder) expandNodes() {
	cp := &b.spec.ControlPlane
	count := 0
	switch {
	case cp.Count != nil:
		count = *cp.Count
	case len(cp.Nodes) == 0:
		count = DefaultControlPlanes
	}
	n := count
	if len(cp.Nodes) > 0 {
		n = len(cp.Nodes)
	}
	if cp.Count != nil && *cp.Count == 0 && len(cp.Nodes) == 0 {
		b.probs.add("controlPlane.count", "0 control planes: a Talos cluster needs 1, 3 or 5 (etcd needs an odd number of members); leave count out for the default 3")
		return
	}
	if n != 1 && n != 3 && n != 5 {
		field := "controlPlane.count"
		if len(cp.Nodes) > 0 {
			field = "controlPlane.nodes"
		}
		b.probs.add(field, "%d control planes: etcd needs an odd number of members to keep quorum; use 1, 3 or 5", n)
	}
	b.expandPool(ControlPlanePool, RoleControlPlane, -1, "controlPlane", count, cp.Nodes, b.cpSize, nil)

	seenPools := map[string]int{}
	for i, wp := range b.spec.WorkerPools {
		field := idx("workerPools", i)
		switch {
		case wp.Name == "":
			b.probs.add(field+".name", "a worker pool needs a name (a DNS label such as \"workers\"); it becomes part of each hostname")
			continue
		case !checkDNSLabel(wp.Name):
			b.probs.add(field+".name", "%q is not a DNS label: use lowercase letters, digits and '-', at most 63 characters", wp.Name)
			continue
		case wp.Name == ControlPlanePool:
			b.probs.add(field+".name", "%q is reserved for the control planes' hostnames: choose another pool name", wp.Name)
			continue
		}
		if j, dup := seenPools[wp.Name]; dup {
			b.probs.add(field+".name", "pool name %q is also used by workerPools[%d]: pool names must be unique", wp.Name, j)
			continue
		}
		seenPools[wp.Name] = i
		b.expandPool(wp.Name, RoleWorker, i, field, wp.Count, wp.Nodes, b.poolSizes[i], wp.DataDisks)
	}
	b.checkUniqueNames()
}

func (b *builder) expandPool(pool string, role Role, poolIndex int, field string, count int, nodes []NodeSpec, size hardware, disks []DataDisk) {
	if len(nodes) > 0 {
		if count != 0 && count != len(nodes) {
			b.probs.add(field+".count", "count is %d but %d nodes are listed: set only one of count and nodes", count, len(nodes))
		}
		listed := make([]*slot, len(nodes))
		for i, ns := range nodes {
			listed[i] = &slot{
				role: role, pool: pool, ordinal: i + 1, field: idx(field+".nodes", i),
				explicit: ns, listed: true, poolIndex: poolIndex, size: size, dataDisks: disks,
			}
			listed[i].name = b.knownName(listed[i])
		}
		for _, s := range listed {
			if s.name == "" {
				s.name, s.ordinal = b.freeName(pool, s.ordinal, listed)
			}
		}
		b.slots = append(b.slots, listed...)
		return
	}
	if count < 0 {
		b.probs.add(field+".count", "count is %d: it cannot be negative", count)
		return
	}
	for o := 1; o <= count; o++ {
		b.slots = append(b.slots, &slot{
			name: defaultNodeName(b.spec.Name, pool, o), role: role, pool: pool, ordinal: o,
			field: field + ".count", poolIndex: poolIndex, size: size, dataDisks: disks,
		})
	}
}

// knownName names a listed node by its own name, else by the previous node
// of the same pool on the same address, so removing a list entry does not
// rename the nodes after it. "" means the node needs a fresh name.
func (b *builder) knownName(s *slot) string {
	if s.explicit.Name != "" {
		return s.explicit.Name
	}
	if a, err := netip.ParseAddr(s.explicit.Address); err == nil && b.prev != nil {
		for _, pn := range b.prev.Nodes {
			if pa, err := netip.ParseAddr(pn.Address); err == nil && pn.Pool == s.pool && pa == a {
				return pn.Name
			}
		}
	}
	return ""
}

// freeName is <cluster>-<pool>-<n> for the lowest n from the node's list
// position on that no other node of the list and no previous node uses.
func (b *builder) freeName(pool string, from int, listed []*slot) (string, int) {
	taken := func(name string) bool {
		for _, s := range listed {
			if s.name == name {
				return true
			}
		}
		return b.prev.node(name) != nil
	}
	for n := from; ; n++ {
		if name := defaultNodeName(b.spec.Name, pool, n); !taken(name) {
			return name, n
		}
	}
}

func (b *builder) checkUniqueNames() {
	seen := map[string]*slot{}
	reported := map[string]bool{} // one problem per count, not per node
	for _, s := range b.slots {
		if !checkDNSLabel(s.name) {
			if !s.listed && !checkDNSLabel(b.spec.Name) {
				continue // the cluster name is reported already
			}
			if !reported[s.field] {
				b.probs.add(s.field, "node name %q is not a DNS label (lowercase letters, digits and '-', at most 63 characters): it is the node's hostname; shorten the cluster or pool name or set nodes[].name", s.name)
			}
			reported[s.field] = true
			continue
		}
		if other, dup := seen[s.name]; dup {
			b.probs.add(s.field, "node name %q is used twice (also %s): node names must be unique in the cluster", s.name, other.field)
			continue
		}
		seen[s.name] = s
	}
	for name := range b.spec.NodePatches {
		if seen[name] == nil {
			b.probs.add("nodePatches", "patches for %q, but the cluster has no node of that name; nodes are: %s", name, strings.Join(b.slotNames(), ", "))
		}
	}
}

func (b *builder) slotNames() []string {
	names := make([]string, 0, len(b.slots))
	for _, s := range b.slots {
		names = append(names, s.name)
	}
	return names
}
