package talos

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"github.com/cosi-project/runtime/pkg/state"

	"github.com/siderolabs/talos/pkg/machinery/nethelpers"
	"github.com/siderolabs/talos/pkg/machinery/resources/network"
)

// The network resources of a VM with virtio NICs whose first NIC has the
// cloud-init address: links (lo, ens18, ...), addresses and routes as the
// kernel reports them and Talos's network controllers publish them
// (internal/app/machined/pkg/controllers/network: link_status.go,
// address_status.go, route_status.go, node_address.go).

// linkName is the predictable name of NIC i: Proxmox puts netN in PCI slot
// 18+N, so the kernel names it ens18, ens19, ...
func linkName(i int) string { return fmt.Sprintf("ens%d", 18+i) }

func publishNetwork(ctx context.Context, st state.State, snap resourceSnapshot) error {
	if err := replaceAll(ctx, st, network.NewLinkStatus(network.NamespaceName, "").Metadata(), linkStatuses(snap)); err != nil {
		return err
	}

	if err := replaceAll(ctx, st, network.NewAddressStatus(network.NamespaceName, "").Metadata(), addressStatuses(snap)); err != nil {
		return err
	}

	if err := replaceAll(ctx, st, network.NewRouteStatus(network.NamespaceName, "").Metadata(), routeStatuses(snap)); err != nil {
		return err
	}

	var nodeAddresses []*network.NodeAddress

	if snap.addr.IsValid() {
		for _, id := range []string{network.NodeAddressCurrentID, network.NodeAddressDefaultID, network.NodeAddressRoutedID, network.NodeAddressAccumulativeID} {
			na := network.NewNodeAddress(network.NamespaceName, id)
			na.TypedSpec().Addresses = []netip.Prefix{snap.addr}
			nodeAddresses = append(nodeAddresses, na)
		}
	}

	if err := replaceAll(ctx, st, network.NewNodeAddress(network.NamespaceName, "").Metadata(), nodeAddresses); err != nil {
		return err
	}

	if snap.hostname == "" {
		return nil
	}

	hs := network.NewHostnameStatus(network.NamespaceName, network.HostnameID)
	hs.TypedSpec().Hostname = snap.hostname

	if err := upsert(ctx, st, hs); err != nil {
		return err
	}

	return publishNodename(ctx, st, snap.hostname)
}

func linkStatuses(snap resourceSnapshot) []*network.LinkStatus {
	lo := network.NewLinkStatus(network.NamespaceName, "lo")
	*lo.TypedSpec() = network.LinkStatusSpec{
		Index:            1,
		Type:             nethelpers.LinkLoopbck,
		Flags:            nethelpers.LinkFlags(nethelpers.LinkUp | nethelpers.LinkLoopback | nethelpers.LinkRunning | nethelpers.LinkLowerUp),
		HardwareAddr:     make(nethelpers.HardwareAddr, 6),
		PermanentAddr:    make(nethelpers.HardwareAddr, 6),
		BroadcastAddr:    make(nethelpers.HardwareAddr, 6),
		MTU:              65536,
		QueueDisc:        "noqueue",
		OperationalState: nethelpers.OperStateUnknown,
		LinkState:        true,
		Port:             nethelpers.Other,
		Duplex:           nethelpers.Unknown,
	}

	out := []*network.LinkStatus{lo}

	for i, nic := range snap.nics {
		mac, err := net.ParseMAC(nic.MAC)
		if err != nil {
			continue
		}

		l := network.NewLinkStatus(network.NamespaceName, linkName(i))
		*l.TypedSpec() = network.LinkStatusSpec{
			Index:            uint32(2 + i),
			Type:             nethelpers.LinkEther,
			Flags:            nethelpers.LinkFlags(nethelpers.LinkUp | nethelpers.LinkBroadcast | nethelpers.LinkRunning | nethelpers.LinkMulticast | nethelpers.LinkLowerUp),
			HardwareAddr:     nethelpers.HardwareAddr(mac),
			PermanentAddr:    nethelpers.HardwareAddr(mac),
			BroadcastAddr:    nethelpers.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
			MTU:              1500,
			QueueDisc:        "pfifo_fast",
			OperationalState: nethelpers.OperStateUp,
			BusPath:          fmt.Sprintf("0000:00:%02x.0", 18+i),
			PCIID:            "1AF4:1000",
			Driver:           "virtio_net",
			DriverVersion:    "1.0.0",
			VendorID:         "0x1af4",
			ProductID:        "0x1000",
			Vendor:           "Red Hat, Inc.",
			Product:          "Virtio network device",
			LinkState:        true,
			SpeedMegabits:    -1,
			Port:             nethelpers.Other,
			Duplex:           nethelpers.Unknown,
		}
		out = append(out, l)
	}

	return out
}

func addressStatuses(snap resourceSnapshot) []*network.AddressStatus {
	add := func(out []*network.AddressStatus, link string, index uint32, p netip.Prefix, scope nethelpers.Scope) []*network.AddressStatus {
		a := network.NewAddressStatus(network.NamespaceName, network.AddressID(link, p))
		spec := a.TypedSpec()
		spec.Address, spec.Local = p, p.Addr()
		spec.LinkIndex, spec.LinkName = index, link
		spec.Family = nethelpers.FamilyInet4
		spec.Scope = scope
		spec.Flags = nethelpers.AddressFlags(nethelpers.AddressPermanent)

		if p.Addr().Is6() {
			spec.Family, spec.Local = nethelpers.FamilyInet6, netip.Addr{}
		} else if scope == nethelpers.ScopeGlobal {
			spec.Broadcast = broadcast(p)
		}

		return append(out, a)
	}

	out := add(nil, "lo", 1, netip.MustParsePrefix("127.0.0.1/8"), nethelpers.ScopeHost)
	out = add(out, "lo", 1, netip.MustParsePrefix("::1/128"), nethelpers.ScopeHost)

	if snap.addr.IsValid() && len(snap.nics) > 0 {
		out = add(out, linkName(0), 2, snap.addr, nethelpers.ScopeGlobal)
	}

	return out
}

// routeStatuses: the connected route of the first NIC's subnet and, with a
// cloud-init gateway, the default route Talos adds (priority 1024,
// network.DefaultRouteMetric).
func routeStatuses(snap resourceSnapshot) []*network.RouteStatus {
	if !snap.addr.IsValid() || len(snap.nics) == 0 {
		return nil
	}

	link := linkName(0)

	route := func(dst netip.Prefix, gw netip.Addr, prio uint32, scope nethelpers.Scope, proto nethelpers.RouteProtocol) *network.RouteStatus {
		r := network.NewRouteStatus(network.NamespaceName, network.RouteID(nethelpers.TableMain, nethelpers.FamilyInet4, dst, gw, prio, link))
		*r.TypedSpec() = network.RouteStatusSpec{
			Family:       nethelpers.FamilyInet4,
			Destination:  dst,
			Source:       snap.addr.Addr(),
			Gateway:      gw,
			OutLinkIndex: 2,
			OutLinkName:  link,
			Table:        nethelpers.TableMain,
			Priority:     prio,
			Scope:        scope,
			Type:         nethelpers.TypeUnicast,
			Protocol:     proto,
		}

		return r
	}

	out := []*network.RouteStatus{route(snap.addr.Masked(), netip.Addr{}, 0, nethelpers.ScopeLink, nethelpers.ProtocolKernel)}

	if snap.gateway.IsValid() {
		out = append(out, route(netip.Prefix{}, snap.gateway, network.DefaultRouteMetric, nethelpers.ScopeGlobal, nethelpers.ProtocolStatic))
	}

	return out
}

func broadcast(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1

	for i := range 4 {
		a[3-i] |= byte(host >> (8 * i))
	}

	return netip.AddrFrom4(a)
}
