package talosapi_test

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	simtalos "github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos"
)

// The lifecycle tests run the package against the lab's simulated Talos
// nodes (tests/lab/talos), which behave like Talos 1.12 for these calls.

const (
	simVersion = "v1.12.5"
	qgaID      = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
	simISO     = "https://factory.talos.dev/image/" + qgaID + "/" + simVersion + "/nocloud-amd64.iso"
)

func installerFor(version string) string {
	return "factory.talos.dev/nocloud-installer/" + qgaID + ":" + version
}

// Each test gets its own 127.X.Y.0/24 block (the Talos port is fixed).
var blockSeq atomic.Uint32

func init() { blockSeq.Store(rand.Uint32N(200)*250 + 7) }

func addressBlock() func(host int) netip.Addr {
	n := blockSeq.Add(1)
	x, y := byte(10+n/250%240), byte(n%250+1)

	return func(host int) netip.Addr { return netip.AddrFrom4([4]byte{127, x, y, byte(host)}) }
}

type simLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *simLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()

	return l.b.Write(p)
}

func (l *simLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()

	return l.b.String()
}

func newSim(t *testing.T) *simtalos.Sim {
	t.Helper()

	logs := &simLog{}
	s := simtalos.New(simtalos.Options{TimeScale: 0, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	t.Cleanup(func() {
		s.Close()

		if t.Failed() {
			t.Logf("simulator log:\n%s", logs.String())
		}
	})

	return s
}

// simHost keeps what a guest writes on its disks.
type simHost struct {
	mu    sync.Mutex
	disks map[string]string
}

func (h *simHost) WriteDisk(disk, content string) error {
	h.mu.Lock()
	defer h.mu.Unlock()

	h.disks[disk] = content

	return nil
}

func (h *simHost) PoweredOff() {}

// bootVM powers on a VM booting the Talos ISO with one disk.
func bootVM(s *simtalos.Sim, name string, addr netip.Addr, disk string) *simtalos.Node {
	m := simtalos.Machine{
		Name: name, VMID: 100 + int(addr.As4()[3]), UUID: fmt.Sprintf("00000000-0000-0000-0000-%012d", addr.As4()[3]),
		Disks:     []simtalos.Disk{{Name: disk, SizeBytes: 20 << 30}},
		CDROM:     simISO,
		BootOrder: []string{disk, "ide2", "net0"},
		NICs:      []simtalos.NIC{{Name: "net0", MAC: fmt.Sprintf("BC:24:11:00:00:%02X", addr.As4()[3])}},
		CloudInit: &simtalos.CloudInit{Hostname: name, Interfaces: []simtalos.IPConfig{{Address: netip.PrefixFrom(addr, 24)}}},
	}

	return s.PowerOn(m, &simHost{disks: map[string]string{}})
}

var (
	bundleOnce sync.Once
	bundle     *secrets.Bundle
	bundleErr  error
)

func simBundle(t *testing.T) *secrets.Bundle {
	t.Helper()

	bundleOnce.Do(func() { bundle, bundleErr = talosconfig.NewSecrets(simVersion, time.Now()) })

	if bundleErr != nil {
		t.Fatal(bundleErr)
	}

	return bundle
}

// nodeConfig generates a configuration with the project's generator.
func nodeConfig(t *testing.T, role talosconfig.Role, endpoint netip.Addr, disk, version string, patches ...string) []byte {
	t.Helper()

	res, err := talosconfig.Generate(talosconfig.Input{
		ClusterName: "lab", Endpoint: "https://" + endpoint.String() + ":6443", Role: role,
		Secrets: simBundle(t), TalosVersion: simVersion, InstallDisk: disk, InstallImage: installerFor(version),
		Patches: patches,
	})
	if err != nil {
		t.Fatal(err)
	}

	return []byte(res.Config)
}

func adminCreds(t *testing.T) *talosapi.Credentials {
	t.Helper()

	b := simBundle(t)

	cert, err := talosconfig.NewAdminCertificate(b, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	return &talosapi.Credentials{CA: b.Certs.OS.Crt, Cert: cert.CertPEM, Key: cert.KeyPEM}
}

func simOptions(t *testing.T) talosapi.Options {
	return talosapi.Options{
		PollMin: 5 * time.Millisecond, PollMax: 50 * time.Millisecond, AttemptTimeout: 5 * time.Second,
		RebootGrace: 2 * time.Second,
		Progress:    func(msg string) { t.Log(msg) },
	}
}
