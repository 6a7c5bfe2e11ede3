package plan

import (
	"fmt"
	"strings"
)

// noMove explains why an existing node keeps its host and address: a new
// VM would boot with the same name and address while the old one still
// runs (Pulumi creates replacements before it deletes), and etcd and the
// certificates know the node by its address.
const noMove = "moving a running node (a new VM elsewhere, or a new address) is not supported; remove the node (scale its pool down, or drop it from the list) and add a new one in a later update"

// hostLoad tracks one host while nodes are placed.
type hostLoad struct {
	Host
	index int
	facts HostFacts
	known bool  // facts are available
	free  int64 // MiB left for new memory after the placements so far
	// freeAfterFixed is free once existing and pinned nodes are placed.
	freeAfterFixed int64
	cps            int
	total          int
	pools          map[string]int
	names          []string
}

// place puts every node on a host. Existing nodes stay where they are and
// pinned nodes go where they are pinned; the others are spread: control
// planes on the host with the fewest control planes (anti-affinity: losing
// one host must not lose etcd quorum), workers on the host with the fewest
// workers of their pool, ties broken by fewest cluster nodes, then by host
// order. Free memory is checked for the whole cluster before anything is
// created, counting only what is new: new VMs, and growth of existing ones.
func (b *builder) place() {
	loads := map[string]*hostLoad{}
	var order []*hostLoad
	for i, h := range b.spec.Hosts {
		l := &hostLoad{Host: h, index: i, pools: map[string]int{}}
		if f, ok := b.facts.Hosts[h.Node]; ok {
			l.facts, l.known, l.free = f, true, f.FreeMemoryMiB
		}
		loads[h.Node] = l
		order = append(order, l)
	}

	var floating []*slot
	for _, s := range b.slots {
		host := s.explicit.Host
		switch {
		case host != "" && s.prev != nil && s.prev.Host != host:
			b.probs.add(s.field+".host", "node %s runs on host %s and would move to %s: %s", s.name, s.prev.Host, host, noMove)
			continue
		case host != "":
			if loads[host] == nil {
				b.probs.add(s.field+".host", "%q is not in the host pool (%s): add it to hosts or pin the node to one of them", host, strings.Join(hostNames(order), ", "))
				continue
			}
			if l := loads[host]; l.known && !l.facts.Online && s.prev == nil {
				b.probs.add(s.field+".host", "host %q is offline: bring it back or pin the node elsewhere", host)
				continue
			}
		case s.prev != nil && loads[s.prev.Host] != nil:
			host = s.prev.Host
		case s.prev != nil:
			b.probs.add(s.field, "node %s runs on host %s, which is no longer in hosts: %s; keep %s in hosts until the node is removed", s.name, s.prev.Host, noMove, s.prev.Host)
			continue
		default:
			floating = append(floating, s)
			continue
		}
		l := loads[host]
		if !b.fitsCPUs(s, l, true) {
			continue
		}
		l.free -= b.memoryNeed(s, host)
		b.assignHost(s, l)
	}
	b.reportFixedShortages(order)
	if b.probs.any() {
		return
	}
	for _, l := range order {
		l.freeAfterFixed = l.free
	}

	var unplaced []*slot
	for _, s := range floating {
		l := b.pickHost(s, order)
		if l == nil {
			unplaced = append(unplaced, s)
			continue
		}
		l.free -= int64(s.size.MemoryMiB)
		b.assignHost(s, l)
	}
	if len(unplaced) > 0 {
		b.reportShortage(order, floating, unplaced)
		return
	}
	b.checkSpread(order)
}

func (b *builder) assignHost(s *slot, l *hostLoad) {
	s.host = l.Node
	l.total++
	l.pools[s.pool]++
	if s.role == RoleControlPlane {
		l.cps++
	}
	l.names = append(l.names, s.name)
}

// memoryNeed is the new memory a node takes on a host: all of it for a new
// VM (or one moving host), the growth for an existing one.
func (b *builder) memoryNeed(s *slot, host string) int64 {
	mem := int64(s.size.MemoryMiB)
	if s.prev == nil || s.prev.Host != host {
		return mem
	}
	return max(0, mem-int64(s.prev.MemoryMiB))
}

// fitsCPUs checks the VM's vCPUs against the host's CPUs: Proxmox refuses
// to start a VM with more ("MAX %d vcpus allowed per VM on this node",
// qemu-server QemuServer.pm). report says whether to report a problem.
func (b *builder) fitsCPUs(s *slot, l *hostLoad, report bool) bool {
	vcpus := s.size.Cores * s.size.Sockets
	if !l.known || l.facts.CPUs == 0 || vcpus <= l.facts.CPUs {
		return true
	}
	if report {
		b.probs.add(s.field, "node %s needs %d vCPUs but host %s has %d CPUs: Proxmox allows at most that many per VM; lower cores or sockets", s.name, vcpus, l.Node, l.facts.CPUs)
	}
	return false
}

// pickHost chooses the host for a node that is neither pinned nor existing.
func (b *builder) pickHost(s *slot, order []*hostLoad) *hostLoad {
	var best *hostLoad
	better := func(a, c *hostLoad) bool {
		ka, kc := a.pools[s.pool], c.pools[s.pool]
		if s.role == RoleControlPlane {
			ka, kc = a.cps, c.cps
		}
		if ka != kc {
			return ka < kc
		}
		if a.total != c.total {
			return a.total < c.total
		}
		return a.index < c.index
	}
	for _, l := range order {
		if l.known && (!l.facts.Online || l.free < int64(s.size.MemoryMiB)) {
			continue
		}
		if !b.fitsCPUs(s, l, false) {
			continue
		}
		if best == nil || better(l, best) {
			best = l
		}
	}
	return best
}

// reportFixedShortages reports hosts that cannot fit the new memory of the
// nodes pinned to them or already on them.
func (b *builder) reportFixedShortages(order []*hostLoad) {
	for _, l := range order {
		if l.known && l.free < 0 {
			b.probs.add(idx("hosts", l.index), "host %s has %d MiB of memory free but its nodes (%s) need %d MiB more: short by %d MiB; free memory on it, move pinned nodes to another host or lower memory",
				l.Node, l.facts.FreeMemoryMiB, strings.Join(l.names, ", "), l.facts.FreeMemoryMiB-l.free, -l.free)
		}
	}
}

// reportShortage explains why nodes could not be placed: the pool as a
// whole is short of memory, or no single host has room for a node.
func (b *builder) reportShortage(order []*hostLoad, floating, unplaced []*slot) {
	var need, free int64
	var left []string
	online := 0
	for _, l := range order {
		if l.known && !l.facts.Online {
			continue
		}
		online++
		free += max(0, l.freeAfterFixed)
		left = append(left, fmt.Sprintf("%s %d MiB", l.Node, max(0, l.free)))
	}
	for _, s := range floating {
		need += int64(s.size.MemoryMiB)
	}
	switch {
	case online == 0:
		b.probs.add("hosts", "every host is offline: bring one back before adding nodes")
	case need > free:
		b.probs.add("hosts", "the hosts cannot fit the cluster: %d new VM(s) need %d MiB of memory and the hosts have %d MiB free: short by %d MiB; add a host, free memory, or lower counts or memory",
			len(floating), need, free, need-free)
	default:
		s := unplaced[0]
		b.probs.add("hosts", "no host has room for node %s (%d MiB, %d vCPUs) once the others are placed; memory left per host: %s; lower its memory or add a host",
			s.name, s.size.MemoryMiB, s.size.Cores*s.size.Sockets, strings.Join(left, ", "))
	}
}

// checkSpread warns when one host holds enough control planes that losing
// it loses etcd quorum.
func (b *builder) checkSpread(order []*hostLoad) {
	n := 0
	for _, s := range b.slots {
		if s.role == RoleControlPlane {
			n++
		}
	}
	if n < 2 {
		return
	}
	quorum := n/2 + 1
	for _, l := range order {
		if l.cps >= quorum {
			var cps []string
			for _, s := range b.slots {
				if s.role == RoleControlPlane && s.host == l.Node {
					cps = append(cps, s.name)
				}
			}
			b.warn("control planes %s share host %s: if it fails, etcd loses quorum and the API stops; add hosts (or free memory on them) to spread the control planes", strings.Join(cps, ", "), l.Node)
		}
	}
}

func hostNames(order []*hostLoad) []string {
	out := make([]string, len(order))
	for i, l := range order {
		out[i] = l.Node
	}
	return out
}
