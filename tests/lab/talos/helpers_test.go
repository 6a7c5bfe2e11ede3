package talos

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/client"
	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
	"github.com/siderolabs/talos/pkg/machinery/config/generate"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"
	"github.com/siderolabs/talos/pkg/machinery/config/machine"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/addrblock"
)

const (
	testVersion = "v1.12.5"
	qgaID       = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
	isoURL      = "https://factory.talos.dev/image/" + qgaID + "/" + testVersion + "/nocloud-amd64.iso"
	installer   = "factory.talos.dev/nocloud-installer/" + qgaID + ":" + testVersion
)

// Each test gets its own 127.X.Y.0/24 block (the Talos API port is fixed
// at 50000 like apid): claimed through package addrblock, like the labs and
// simtest, so that tests in other processes running at the same time (other
// packages, other worktrees) never share an address with these.
func addressBlock() func(host int) netip.Addr {
	host, err := addrblock.Hold()
	if err != nil {
		panic(err)
	}

	return host
}

// testLog collects the simulator's log for assertions.
type testLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()

	return l.buf.Write(p)
}

func (l *testLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()

	return l.buf.String()
}

func newSim(t *testing.T) (*Sim, *testLog) {
	t.Helper()

	return newSimWith(t, Options{})
}

// newSimWith starts a simulator with opts at time scale 0, logging to the
// returned log.
func newSimWith(t *testing.T, opts Options) (*Sim, *testLog) {
	t.Helper()

	logs := &testLog{}
	opts.TimeScale, opts.Logger = 0, slog.New(slog.NewTextHandler(logs, nil))
	s := New(opts)
	t.Cleanup(func() {
		s.Close()

		if t.Failed() || os.Getenv("SIMLOG") != "" {
			t.Logf("simulator log:\n%s", logs.String())
		}
	})

	return s, logs
}

// fakeHost is the hypervisor side: it keeps what the guest writes.
type fakeHost struct {
	mu       sync.Mutex
	disks    map[string]string
	poweroff chan struct{}
	once     sync.Once
}

func newHost() *fakeHost {
	return &fakeHost{disks: map[string]string{}, poweroff: make(chan struct{})}
}

func (h *fakeHost) WriteDisk(disk, content string) error {
	h.mu.Lock()
	defer h.mu.Unlock()

	h.disks[disk] = content

	return nil
}

func (h *fakeHost) PoweredOff() { h.once.Do(func() { close(h.poweroff) }) }

func (h *fakeHost) content(disk string) string {
	h.mu.Lock()
	defer h.mu.Unlock()

	return h.disks[disk]
}

// vm is a test VM: its machine description and its host, so it can be
// stopped and started again with what was written on its disks.
type vm struct {
	m    Machine
	host *fakeHost
	node *Node
}

func newVM(name string, addr netip.Addr, disk string) *vm {
	return &vm{
		host: newHost(),
		m: Machine{
			Name: name, VMID: 100 + int(addr.As4()[3]), UUID: fmt.Sprintf("00000000-0000-0000-0000-%012d", addr.As4()[3]),
			Disks:     []Disk{{Name: disk, SizeBytes: 20 << 30}},
			CDROM:     isoURL,
			BootOrder: []string{disk, "ide2", "net0"},
			NICs:      []NIC{{Name: "net0", MAC: "BC:24:11:00:00:" + fmt.Sprintf("%02X", addr.As4()[3])}},
			CloudInit: &CloudInit{Hostname: name, Interfaces: []IPConfig{{Address: netip.PrefixFrom(addr, 24)}}},
		},
	}
}

func (v *vm) start(s *Sim) *Node {
	m := cloneMachine(v.m)

	for i := range m.Disks {
		if c := v.host.content(m.Disks[i].Name); c != "" {
			m.Disks[i].Content = c
		}
	}

	v.host.once = sync.Once{}
	v.host.poweroff = make(chan struct{})
	v.node = s.PowerOn(m, v.host)

	return v.node
}

func (v *vm) addr() netip.Addr { return v.m.CloudInit.Interfaces[0].Address.Addr() }

// waitFor polls a condition (the simulator runs at time scale 0, so waits
// are short; the limit only guards against hangs).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()

	// Generous: the real kube-apiserver and etcd start as processes, slower
	// on a loaded machine.
	// A bound only so that a broken lab fails instead of hanging; longer
	// than the lab waits for a starting kube-apiserver (startTimeout).
	deadline := time.Now().Add(startTimeout + time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}

		time.Sleep(50 * time.Millisecond)
	}
}

func waitPhase(t *testing.T, n *Node, p Phase) {
	t.Helper()
	waitFor(t, fmt.Sprintf("phase %q (now %q)", p, n.Status().Phase), func() bool { return n.Status().Phase == p })
}

// Secrets are expensive to generate: one bundle for the package's tests.
var (
	bundleOnce sync.Once
	bundle     *secrets.Bundle
	bundleErr  error
)

func testBundle(t *testing.T) *secrets.Bundle {
	t.Helper()

	bundleOnce.Do(func() {
		bundle, bundleErr = secrets.NewBundle(secrets.NewFixedClock(time.Now()), config.TalosVersionCurrent)
	})

	if bundleErr != nil {
		t.Fatal(bundleErr)
	}

	return bundle
}

// clusterInput generates configs with machinery, as the provider does.
func clusterInput(t *testing.T, endpoint netip.Addr, opts ...generate.Option) *generate.Input {
	t.Helper()

	return clusterInputK8s(t, endpoint, "1.35.2", opts...)
}

// clusterInputK8s is clusterInput for a given Kubernetes version.
func clusterInputK8s(t *testing.T, endpoint netip.Addr, k8s string, opts ...generate.Option) *generate.Input {
	t.Helper()

	opts = append([]generate.Option{
		generate.WithSecretsBundle(testBundle(t)),
		generate.WithInstallDisk("/dev/sda"),
		generate.WithInstallImage(installer),
		generate.WithEndpointList([]string{endpoint.String()}),
	}, opts...)

	in, err := generate.NewInput("lab", "https://"+endpoint.String()+":6443", k8s, opts...)
	if err != nil {
		t.Fatal(err)
	}

	return in
}

func configBytes(t *testing.T, in *generate.Input, typ machine.Type, patches ...func(string) string) []byte {
	t.Helper()

	cfg, err := in.Config(typ)
	if err != nil {
		t.Fatal(err)
	}

	b, err := cfg.EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))
	if err != nil {
		t.Fatal(err)
	}

	s := string(b)
	for _, p := range patches {
		s = p(s)
	}

	return []byte(s)
}

// maintenanceClient connects like `talosctl --insecure`.
func maintenanceClient(t *testing.T, addr netip.Addr) *client.Client {
	t.Helper()

	c, err := client.New(context.Background(),
		client.WithEndpoints(addr.String()),
		client.WithTLSConfig(&tls.Config{InsecureSkipVerify: true}), //nolint:gosec // maintenance mode, as talosctl --insecure
	)
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { c.Close() }) //nolint:errcheck

	return c
}

// secureClient connects with a talosconfig, as talosctl does.
func secureClient(t *testing.T, cfg *clientconfig.Config, endpoints ...netip.Addr) *client.Client {
	t.Helper()

	eps := make([]string, 0, len(endpoints))
	for _, e := range endpoints {
		eps = append(eps, e.String())
	}

	c, err := client.New(context.Background(), client.WithConfig(cfg), client.WithEndpoints(eps...))
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { c.Close() }) //nolint:errcheck

	return c
}

func adminTalosconfig(t *testing.T, in *generate.Input) *clientconfig.Config {
	t.Helper()

	cfg, err := in.Talosconfig()
	if err != nil {
		t.Fatal(err)
	}

	return cfg
}

func ctxT(t *testing.T) context.Context {
	t.Helper()

	// Bounds a whole test: clusters start real kube-apiservers, slower on a
	// loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)

	return ctx
}

func mustContain(t *testing.T, err error, want string) {
	t.Helper()

	if err == nil {
		t.Fatalf("expected an error containing %q, got none", want)
	}

	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not contain %q", err, want)
	}
}

func netipPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func kubeToolsT(t *testing.T) KubeTools {
	t.Helper()

	k, err := FindKubeTools()
	if err != nil {
		t.Fatal(err)
	}

	return k
}
