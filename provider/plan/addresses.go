package plan

import (
	"net/netip"
)

// addrSpace is one network's subnet, allocation range and taken addresses.
type addrSpace struct {
	field    string // input path of the NIC, e.g. "network"
	subnet   netip.Prefix
	hasRange bool
	start    netip.Addr
	end      netip.Addr
	// used maps each taken address to who holds it, for error messages.
	used map[netip.Addr]string
}

// parseSpace checks a NIC's subnet, gateway and range. ok is false when a
// problem was reported.
func (b *builder) parseSpace(field string, nic *NIC) (sp *addrSpace, ok bool) {
	sp = &addrSpace{field: field, used: map[netip.Addr]string{}}
	pfx, err := netip.ParsePrefix(nic.Subnet)
	if err != nil {
		b.probs.add(field+".subnet", "%q is not a subnet in CIDR form like \"192.168.1.0/24\"", nic.Subnet)
		return nil, false
	}
	sp.subnet = pfx.Masked()
	ok = true
	if nic.Gateway != "" {
		gw, err := netip.ParseAddr(nic.Gateway)
		switch {
		case err != nil:
			b.probs.add(field+".gateway", "%q is not an IP address", nic.Gateway)
			ok = false
		case !sp.usable(gw):
			b.probs.add(field+".gateway", "%s is not a usable address of subnet %s: the gateway must be inside the subnet (not its network or broadcast address); fix the gateway or the subnet", gw, sp.subnet)
			ok = false
		default:
			sp.used[gw] = "the gateway"
		}
	}
	if r := nic.AddressRange; r != nil {
		start, err1 := netip.ParseAddr(r.Start)
		end, err2 := netip.ParseAddr(r.End)
		switch {
		case err1 != nil:
			b.probs.add(field+".addressRange.start", "%q is not an IP address", r.Start)
			ok = false
		case err2 != nil:
			b.probs.add(field+".addressRange.end", "%q is not an IP address", r.End)
			ok = false
		case !sp.usable(start) || !sp.usable(end):
			b.probs.add(field+".addressRange", "%s-%s is not inside the usable addresses of subnet %s (the network and broadcast addresses are not usable)", start, end, sp.subnet)
			ok = false
		case end.Less(start):
			b.probs.add(field+".addressRange", "the range ends (%s) before it starts (%s)", end, start)
			ok = false
		default:
			sp.hasRange, sp.start, sp.end = true, start, end
		}
	}
	return sp, ok
}

// usable reports whether a is a host address of the subnet: inside it, and
// for IPv4 subnets larger than /31 neither the network nor the broadcast
// address.
func (sp *addrSpace) usable(a netip.Addr) bool {
	if !sp.subnet.Contains(a) {
		return false
	}
	if a.Is4() && sp.subnet.Bits() < 31 {
		if a == sp.subnet.Addr() || a == lastAddr(sp.subnet) {
			return false
		}
	}
	return true
}

func (sp *addrSpace) inRange(a netip.Addr) bool {
	return sp.hasRange && !a.Less(sp.start) && !sp.end.Less(a)
}

// next takes the lowest free address of the range.
func (sp *addrSpace) next(owner string) (netip.Addr, bool) {
	if !sp.hasRange {
		return netip.Addr{}, false
	}
	for a := sp.start; a.IsValid() && !sp.end.Less(a); a = a.Next() {
		if _, taken := sp.used[a]; !taken {
			sp.used[a] = owner
			return a, true
		}
	}
	return netip.Addr{}, false
}

// size is the number of addresses in the range, capped for huge IPv6 ranges.
func (sp *addrSpace) size() int {
	n := 0
	for a := sp.start; a.IsValid() && !sp.end.Less(a) && n < 1<<20; a = a.Next() {
		n++
	}
	return n
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	hostBits := len(b)*8 - p.Bits()
	for i := len(b) - 1; i >= 0 && hostBits > 0; i-- {
		n := min(hostBits, 8)
		b[i] |= byte(1<<n - 1)
		hostBits -= n
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// allocateAddresses gives every node its addresses: an explicit address
// first, else the address it had before (existing nodes are never
// renumbered), else the lowest free address of the range in canonical node
// order. It also checks the VIP and DNS servers.
func (b *builder) allocateAddresses() {
	net := &b.spec.Network
	if net.Subnet == "" {
		b.probs.add("network.subnet", "the node subnet is required, in CIDR form like \"192.168.1.0/24\"")
		return
	}
	sp, ok := b.parseSpace("network", &net.NIC)
	if !ok {
		return
	}
	for i, d := range net.DNSServers {
		if _, err := netip.ParseAddr(d); err != nil {
			b.probs.add(idx("network.dnsServers", i), "%q is not an IP address", d)
		}
	}
	b.checkVIP(sp)
	b.assign(sp, func(s *slot) string { return s.explicit.Address }, func(s *slot) string { return b.prevField(s, false) },
		func(s *slot, a string) { s.address = a }, ".address")
	b.primary = sp

	if sec := net.Secondary; sec != nil && sec.Subnet != "" {
		ssp, ok := b.parseSpace("network.secondary", sec)
		if !ok {
			return
		}
		b.assign(ssp, func(s *slot) string { return s.explicit.SecondaryAddress }, func(s *slot) string { return b.prevField(s, true) },
			func(s *slot, a string) { s.secondary = a }, ".secondaryAddress")
		b.secondary = ssp
	} else if sec != nil {
		for _, s := range b.slots {
			if s.explicit.SecondaryAddress != "" {
				b.probs.add(s.field+".secondaryAddress", "the secondary network has no subnet (it uses DHCP): set network.secondary.subnet to give static addresses")
			}
		}
	}
}

// prevField is the address a node had: from its VM, else (a VM on an
// offline host, or one deleted outside Pulumi) the one the cluster knows
// it by, or its VM had in the stack's state (Facts.Membership), so that it
// comes back where it was.
func (b *builder) prevField(s *slot, secondary bool) string {
	switch {
	case secondary && s.prev != nil:
		return s.prev.SecondaryAddress
	case secondary:
		return ""
	case s.prev != nil && s.prev.Address != "":
		return s.prev.Address
	}
	return b.facts.address(s.name)
}

func (b *builder) checkVIP(sp *addrSpace) {
	if b.spec.VIP == "" {
		return
	}
	vip, err := netip.ParseAddr(b.spec.VIP)
	switch {
	case err != nil:
		b.probs.add("vip", "%q is not an IP address", b.spec.VIP)
	case !sp.usable(vip):
		b.probs.add("vip", "%s is outside the node subnet %s: a layer-2 VIP must be on the control planes' own network", vip, sp.subnet)
	case sp.inRange(vip):
		b.probs.add("vip", "%s is inside the address range %s-%s that nodes are allocated from: pick an address outside it or shrink the range", vip, sp.start, sp.end)
	default:
		if owner, taken := sp.used[vip]; taken {
			b.probs.add("vip", "%s is already %s", vip, owner)
			return
		}
		sp.used[vip] = "the VIP"
		b.vip = vip
	}
}

// assign runs the three passes of address assignment on one network.
func (b *builder) assign(sp *addrSpace, explicit, previous func(*slot) string, set func(*slot, string), suffix string) {
	// 1. Explicit addresses.
	for _, s := range b.slots {
		raw := explicit(s)
		if raw == "" {
			continue
		}
		f := s.field + suffix
		a, err := netip.ParseAddr(raw)
		if err != nil {
			b.probs.add(f, "%q is not an IP address (give it without a prefix length; the subnet gives that)", raw)
			continue
		}
		if !sp.usable(a) {
			b.probs.add(f, "%s is not a usable address of subnet %s: give an address inside the subnet (not its network or broadcast address)", a, sp.subnet)
			continue
		}
		if owner, taken := sp.used[a]; taken {
			b.probs.add(f, "%s is already %s: choose another address", a, owner)
			continue
		}
		if was, err := netip.ParseAddr(previous(s)); err == nil && was != a {
			b.probs.add(f, "node %s has address %s: %s", s.name, was, noMove)
			continue
		}
		sp.used[a] = "the address of node " + s.name
		set(s, a.String())
	}
	// 2. Existing nodes keep their addresses.
	for _, s := range b.slots {
		if explicit(s) != "" {
			continue
		}
		raw := previous(s)
		if raw == "" {
			continue
		}
		a, err := netip.ParseAddr(raw)
		if err != nil || !sp.usable(a) {
			b.probs.add(s.field, "node %s has address %s, outside the subnet %s: %s", s.name, raw, sp.subnet, noMove)
			continue
		}
		if owner, taken := sp.used[a]; taken {
			b.probs.add(s.field, "existing node %s has address %s, which is now %s: keep the node's address or give the other one a different address", s.name, a, owner)
			continue
		}
		sp.used[a] = "the address of node " + s.name
		set(s, a.String())
	}
	// 3. The rest from the range, in canonical order.
	var missing []*slot
	for _, s := range b.slots {
		if explicit(s) != "" || b.assigned(sp, s, previous) {
			continue
		}
		if a, ok := sp.next("the address of node " + s.name); ok {
			set(s, a.String())
			continue
		}
		missing = append(missing, s)
	}
	if len(missing) == 0 {
		return
	}
	if !sp.hasRange {
		b.probs.add(sp.field+".addressRange", "%d node(s) (%s) have no address: set %s.addressRange to allocate from, or give each node an address", len(missing), slotList(missing), sp.field)
		return
	}
	b.probs.add(sp.field+".addressRange", "the range %s-%s has %d addresses but %d more are needed (for %s): widen the range",
		sp.start, sp.end, sp.size(), len(missing), slotList(missing))
}

// assigned reports whether pass 2 kept the node's previous address.
func (b *builder) assigned(sp *addrSpace, s *slot, previous func(*slot) string) bool {
	raw := previous(s)
	if raw == "" {
		return false
	}
	a, err := netip.ParseAddr(raw)
	return err == nil && sp.used[a] == "the address of node "+s.name
}

func slotList(ss []*slot) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += ", "
		}
		if i == 5 {
			return out + "..."
		}
		out += s.name
	}
	return out
}
