// Package simtest is what other packages' tests need to run against the lab's
// simulated Talos nodes (package tests/lab/talos) without a whole lab: a
// simulator whose log is shown when the test fails, a 127.X.Y.0/24 address
// block per test, and a VM booting the Talos ISO from one disk.
package simtest

import (
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/addrblock"
	simtalos "github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos"
)

const (
	// Version is the Talos version the simulated nodes boot.
	Version = "v1.12.5"
	// Schematic is the Image Factory schematic with siderolabs/qemu-guest-agent.
	Schematic = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
	// ISO is the Image Factory nocloud ISO of Schematic at Version.
	ISO = "https://factory.talos.dev/image/" + Schematic + "/" + Version + "/nocloud-amd64.iso"
)

// Installer is the Image Factory nocloud installer image of Schematic at version.
func Installer(version string) string {
	return "factory.talos.dev/nocloud-installer/" + Schematic + ":" + version
}

// AddressBlock returns a fresh 127.X.Y.0/24 block as host -> 127.X.Y.host.
// The Talos API port is fixed, so tests running at the same time, in this
// process or another (labs included), need distinct addresses: the block is
// claimed through package addrblock and held until the process exits.
func AddressBlock() func(host int) netip.Addr {
	host, err := addrblock.Hold()
	if err != nil {
		panic(err)
	}

	return host
}

// Start runs a simulator at time scale 0, closed when the test ends; its log
// is written to the test's log when the test failed.
func Start(t testing.TB) *simtalos.Sim {
	t.Helper()

	// The simulated clusters run the real kube-apiserver and etcd: say at
	// once when they are not built rather than time out later.
	if _, err := simtalos.FindKubeTools(); err != nil {
		t.Fatal(err)
	}

	logs := &lockedLog{}
	s := simtalos.New(simtalos.Options{TimeScale: 0, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	t.Cleanup(func() {
		s.Close()

		if t.Failed() {
			t.Logf("simulator log:\n%s", logs.String())
		}
	})

	return s
}

// Boot powers on a VM that boots the Talos ISO, with one 20 GiB disk first in
// the boot order and cloud-init giving it addr/24. VMID, UUID and MAC derive
// from addr's last byte, so they are unique within one address block.
func Boot(s *simtalos.Sim, name string, addr netip.Addr, disk string) *simtalos.Node {
	return NewVM(name, addr, disk).PowerOn(s)
}

// BootVersion is Boot with the Image Factory ISO of Schematic at version.
func BootVersion(s *simtalos.Sim, name string, addr netip.Addr, disk, version string) *simtalos.Node {
	vm := NewVM(name, addr, disk)
	vm.machine.CDROM = strings.ReplaceAll(ISO, Version, version)

	return vm.PowerOn(s)
}

// VM is a machine that keeps what its guest wrote on its disk across power
// cycles, as a Proxmox VM does.
type VM struct {
	machine simtalos.Machine
	host    *diskHost
}

// NewVM is the machine Boot powers on: a 20 GiB disk first in the boot
// order, then the Talos ISO; cloud-init gives it addr/24. VMID, UUID and
// MAC derive from addr's last byte, so they are unique within one address
// block.
func NewVM(name string, addr netip.Addr, disk string) *VM {
	host := addr.As4()[3]

	return &VM{
		machine: simtalos.Machine{
			Name: name, VMID: 100 + int(host), UUID: fmt.Sprintf("00000000-0000-0000-0000-%012d", host),
			Disks:     []simtalos.Disk{{Name: disk, SizeBytes: 20 << 30}},
			CDROM:     ISO,
			BootOrder: []string{disk, "ide2", "net0"},
			NICs:      []simtalos.NIC{{Name: "net0", MAC: fmt.Sprintf("BC:24:11:00:00:%02X", host)}},
			CloudInit: &simtalos.CloudInit{Hostname: name, Interfaces: []simtalos.IPConfig{{Address: netip.PrefixFrom(addr, 24)}}},
		},
		host: &diskHost{disks: map[string]string{}},
	}
}

// PowerOn starts the VM from what its disk holds.
func (v *VM) PowerOn(s *simtalos.Sim) *simtalos.Node {
	m := v.machine
	m.Disks = append([]simtalos.Disk(nil), m.Disks...)

	v.host.mu.Lock()
	for i := range m.Disks {
		m.Disks[i].Content = v.host.disks[m.Disks[i].Name]
	}
	v.host.mu.Unlock()

	return s.PowerOn(m, v.host)
}

// diskHost keeps what a guest writes on its disks.
type diskHost struct {
	mu    sync.Mutex
	disks map[string]string
}

func (h *diskHost) WriteDisk(disk, content string) error {
	h.mu.Lock()
	defer h.mu.Unlock()

	h.disks[disk] = content

	return nil
}

func (h *diskHost) PoweredOff() {}

// lockedLog is the simulator's log; nodes write to it from their goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()

	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()

	return l.b.String()
}
