package lab

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pve"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos"
)

// TalosBooter boots a simulated Talos node (package talos) in every VM the
// lab starts: it hands the simulator what Proxmox gives the guest (disks and
// what they hold, the ISO's source URL, boot order, NICs, cloud-init data)
// and relays disk writes, guest power-off and agent answers back.
func TalosBooter(sim *talos.Sim) pve.GuestBooter {
	return func(ctx context.Context, vm pve.BootInfo, host pve.Host) pve.Guest {
		g := &talosGuest{ctx: ctx, info: vm, host: host}
		g.node = sim.PowerOn(talosMachine(vm), g)

		return g
	}
}

// newTalosSim starts the simulator a lab uses by default.
func newTalosSim(opts Options, catalog *talos.Catalog, pull func(string) error) *talos.Sim {
	return talos.New(talos.Options{TimeScale: opts.TimeScale, Logger: logfLogger(opts.Logf), Catalog: catalog, Pull: pull})
}

// talosMachine translates Proxmox's boot information.
func talosMachine(vm pve.BootInfo) talos.Machine {
	m := talos.Machine{
		Name: vm.Name, VMID: vm.VMID, UUID: vm.SMBIOSUUID,
		BootOrder: vm.BootOrder,
		UEFI:      vm.BIOS == "ovmf",
		Cores:     vm.Cores * max(vm.Sockets, 1),
		MemoryMiB: vm.MemoryMiB,
	}

	for _, d := range vm.Disks {
		switch {
		case d.Media == "cdrom":
			if vm.CDROM != nil && d.Image.Volume == vm.CDROM.Volume && m.CDROMDrive == "" {
				m.CDROM, m.CDROMDrive = vm.CDROM.SourceURL, d.Interface
			}
		case strings.HasPrefix(d.Interface, "efidisk"), strings.HasPrefix(d.Interface, "tpmstate"):
		default:
			m.Disks = append(m.Disks, talos.Disk{
				Name: d.Interface, SizeBytes: uint64(max(d.SizeBytes, 0)), SSD: d.SSD,
				SourceURL: d.Image.SourceURL, Content: d.Image.Written,
			})
		}
	}

	for _, nic := range vm.NICs {
		m.NICs = append(m.NICs, talos.NIC{Name: nic.Name, MAC: nic.MAC})
	}

	if ci := vm.CloudInit; ci != nil {
		tci := &talos.CloudInit{Hostname: ci.Hostname, SearchDomain: ci.SearchDomain}

		for _, nic := range vm.NICs {
			tci.Interfaces = append(tci.Interfaces, ipConfig(ci.IPConfigs[nic.Name]))
		}

		for _, ns := range ci.Nameservers {
			if a, err := netip.ParseAddr(ns); err == nil {
				tci.Nameservers = append(tci.Nameservers, a)
			}
		}

		m.CloudInit = tci
	}

	return m
}

// ipConfig reads an ipconfigN entry: "ip=<cidr>|dhcp", "gw=<address>".
func ipConfig(c pve.IPConfig) talos.IPConfig {
	if c.IP == "" || c.IP == "dhcp" || c.IP == "manual" {
		return talos.IPConfig{DHCP: c.IP == "dhcp"}
	}

	var out talos.IPConfig

	if p, err := netip.ParsePrefix(c.IP); err == nil {
		out.Address = p
	}

	if gw, err := netip.ParseAddr(c.Gateway); err == nil {
		out.Gateway = gw
	}

	return out
}

// talosGuest is a simulated Talos node as the Proxmox half sees it.
type talosGuest struct {
	ctx  context.Context //nolint:containedctx // the VM's qemu lifetime
	info pve.BootInfo
	host pve.Host
	node *talos.Node

	mu sync.Mutex
}

// WriteDisk records what Talos wrote on a disk (by interface name), keeping
// where the volume's content came from.
func (g *talosGuest) WriteDisk(disk, content string) error {
	g.mu.Lock()
	defer g.mu.Unlock()

	for i, d := range g.info.Disks {
		if d.Interface != disk {
			continue
		}

		img := d.Image
		img.Written = content

		if err := g.host.WriteImage(d.Volume, img); err != nil {
			return err
		}

		g.info.Disks[i].Image = img

		return nil
	}

	return fmt.Errorf("VM %d has no disk %s", g.info.VMID, disk)
}

// PoweredOff: the guest turned itself off; qemu exits (Proxmox ignores it
// from a guest that was already replaced).
func (g *talosGuest) PoweredOff() {
	if g.ctx.Err() == nil {
		g.host.PoweredOff()
	}
}

func (g *talosGuest) PowerOff() { g.node.PowerOff() }

func (g *talosGuest) Shutdown(ctx context.Context) error { return g.node.Shutdown(ctx) }

// Pause and Resume: Proxmox paused or continued the VM (pve.Pauser).
func (g *talosGuest) Pause() { g.node.Pause() }

func (g *talosGuest) Resume() { g.node.Resume() }

func (g *talosGuest) Agent() (pve.AgentInfo, bool) {
	a, ok := g.node.Agent()
	if !ok {
		return pve.AgentInfo{}, false
	}

	out := pve.AgentInfo{
		Hostname: a.Hostname, OSID: "talos", OSName: a.OSName, OSVersion: a.OSVersion,
		KernelRelease: "talos-" + a.OSVersion,
	}

	for _, iface := range a.Interfaces {
		ai := pve.AgentInterface{Name: iface.Name, MAC: strings.ToLower(iface.MAC)}
		if ai.MAC == "" {
			ai.MAC = "00:00:00:00:00:00"
		}

		for _, p := range iface.Addresses {
			ai.Addresses = append(ai.Addresses, p.String())
		}

		out.Interfaces = append(out.Interfaces, ai)
	}

	return out, true
}

// logfLogger turns the lab's Logf into the simulator's logger.
func logfLogger(logf func(format string, args ...any)) *slog.Logger {
	if logf == nil {
		return nil
	}

	return slog.New(slog.NewTextHandler(logfWriter(logf), &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == slog.LevelKey {
				return slog.Attr{}
			}

			return a
		},
	}))
}

type logfWriter func(format string, args ...any)

func (w logfWriter) Write(p []byte) (int, error) {
	w("talos: %s", strings.TrimRight(string(p), "\n"))

	return len(p), nil
}
