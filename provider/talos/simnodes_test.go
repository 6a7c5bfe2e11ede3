package talos

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

	"github.com/blang/semver"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi-go-provider/integration"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	simtalos "github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos"
)

// Lifecycle tests drive the node-facing resources through pulumi-go-provider's
// integration server against the lab's simulated Talos nodes.

const (
	simVersion = "v1.12.5"
	simQGA     = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
	simISO     = "https://factory.talos.dev/image/" + simQGA + "/" + simVersion + "/nocloud-amd64.iso"
)

func simInstaller(version string) string {
	return "factory.talos.dev/nocloud-installer/" + simQGA + ":" + version
}

var simBlock atomic.Uint32

func init() { simBlock.Store(rand.Uint32N(200)*250 + 11) }

func simAddresses() func(host int) netip.Addr {
	n := simBlock.Add(1)
	x, y := byte(10+n/250%240), byte(n%250+1)

	return func(host int) netip.Addr { return netip.AddrFrom4([4]byte{127, x, y, byte(host)}) }
}

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

func startSim(t *testing.T) *simtalos.Sim {
	t.Helper()

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

func simBoot(s *simtalos.Sim, name string, addr netip.Addr, disk string) *simtalos.Node {
	return s.PowerOn(simtalos.Machine{
		Name: name, VMID: 100 + int(addr.As4()[3]), UUID: fmt.Sprintf("00000000-0000-0000-0000-%012d", addr.As4()[3]),
		Disks:     []simtalos.Disk{{Name: disk, SizeBytes: 20 << 30}},
		CDROM:     simISO,
		BootOrder: []string{disk, "ide2", "net0"},
		NICs:      []simtalos.NIC{{Name: "net0", MAC: fmt.Sprintf("BC:24:11:00:01:%02X", addr.As4()[3])}},
		CloudInit: &simtalos.CloudInit{Hostname: name, Interfaces: []simtalos.IPConfig{{Address: netip.PrefixFrom(addr, 24)}}},
	}, &diskHost{disks: map[string]string{}})
}

// simCluster is one cluster's secrets and client configuration.
type simCluster struct {
	t        *testing.T
	endpoint netip.Addr
	client   ClientConfiguration
	bundle   *secrets.Bundle
}

func newSimCluster(t *testing.T, endpoint netip.Addr) *simCluster {
	t.Helper()

	applyBundleOnce.Do(func() { applyBundle, applyBundleErr = talosconfig.NewSecrets(simVersion, applyTestNow) })

	if applyBundleErr != nil {
		t.Fatal(applyBundleErr)
	}

	return newSimClusterWith(t, endpoint, applyBundle)
}

// newSimClusterWith is a cluster with its own secrets (its own CAs).
func newSimClusterWith(t *testing.T, endpoint netip.Addr, bundle *secrets.Bundle) *simCluster {
	t.Helper()

	cert, err := talosconfig.NewAdminCertificate(bundle, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	return &simCluster{t: t, endpoint: endpoint, bundle: bundle, client: ClientConfiguration{
		CACertificate: string(bundle.Certs.OS.Crt), ClientCertificate: string(cert.CertPEM), ClientKey: string(cert.KeyPEM),
	}}
}

func (c *simCluster) config(role talosconfig.Role, disk, version string, patches ...string) string {
	c.t.Helper()

	res, err := talosconfig.Generate(talosconfig.Input{
		ClusterName: "lab", Endpoint: "https://" + c.endpoint.String() + ":6443", Role: role,
		Secrets: c.bundle, TalosVersion: simVersion, InstallDisk: disk, InstallImage: simInstaller(version),
		Patches: patches,
	})
	if err != nil {
		c.t.Fatal(err)
	}

	return res.Config
}

func (c *simCluster) clientValue() property.Value {
	return property.New(map[string]property.Value{
		"caCertificate":     property.New(c.client.CACertificate),
		"clientCertificate": property.New(c.client.ClientCertificate),
		"clientKey":         property.New(c.client.ClientKey).WithSecret(true),
	}).WithSecret(true)
}

// fastOpts poll quickly: the simulator runs at time scale 0.
var fastOpts = talosapi.Options{PollMin: 5 * time.Millisecond, PollMax: 50 * time.Millisecond, AttemptTimeout: 5 * time.Second, RebootGrace: 2 * time.Second}

func nodeServer(t *testing.T, kubeNow func() time.Time) integration.Server {
	t.Helper()

	prov, err := infer.NewProviderBuilder().
		WithResources(
			infer.Resource(&ConfigurationApply{opts: fastOpts}),
			infer.Resource(&Bootstrap{opts: fastOpts}),
			infer.Resource(&Kubeconfig{opts: fastOpts, now: kubeNow}),
			infer.Resource(&ClusterHealth{opts: fastOpts}),
		).
		Build()
	if err != nil {
		t.Fatal(err)
	}

	s, err := integration.NewServer(t.Context(), "proxmoxtalos", semver.MustParse("0.0.1"), integration.WithProvider(prov))
	if err != nil {
		t.Fatal(err)
	}

	return s
}

// res drives one resource through the provider like the engine does.
type res struct {
	t     *testing.T
	s     integration.Server
	urn   presource.URN
	id    string
	state property.Map
}

func newRes(t *testing.T, s integration.Server, typ, name string) *res {
	return &res{t: t, s: s, urn: presource.NewURN("test", "proj", "", tokens.Type("proxmoxtalos:talos:"+typ), name)}
}

// check runs Check and fails the test on failures.
func (r *res) check(inputs map[string]property.Value) property.Map {
	r.t.Helper()

	resp, err := r.s.Check(p.CheckRequest{Urn: r.urn, State: r.state, Inputs: property.NewMap(inputs)})
	if err != nil {
		r.t.Fatal(err)
	}

	if len(resp.Failures) > 0 {
		r.t.Fatalf("check failures: %+v", resp.Failures)
	}

	return resp.Inputs
}

func (r *res) create(inputs map[string]property.Value) error {
	r.t.Helper()

	checked := r.check(inputs)

	if _, err := r.s.Create(p.CreateRequest{Urn: r.urn, Properties: checked, DryRun: true}); err != nil {
		r.t.Fatalf("preview create: %v", err)
	}

	resp, err := r.s.Create(p.CreateRequest{Urn: r.urn, Properties: checked})
	if resp.ID != "" {
		r.id, r.state = resp.ID, resp.Properties
	}

	return err
}

// diff checks new inputs and diffs them against the state.
func (r *res) diff(inputs map[string]property.Value) (property.Map, p.DiffResponse) {
	r.t.Helper()

	checked := r.check(inputs)

	d, err := r.s.Diff(p.DiffRequest{ID: r.id, Urn: r.urn, State: r.state, Inputs: checked})
	if err != nil {
		r.t.Fatal(err)
	}

	return checked, d
}

func (r *res) update(checked property.Map) error {
	r.t.Helper()

	if _, err := r.s.Update(p.UpdateRequest{ID: r.id, Urn: r.urn, State: r.state, Inputs: checked, DryRun: true}); err != nil {
		r.t.Fatalf("preview update: %v", err)
	}

	resp, err := r.s.Update(p.UpdateRequest{ID: r.id, Urn: r.urn, State: r.state, Inputs: checked})
	if resp.Properties.Len() > 0 {
		r.state = resp.Properties
	}

	return err
}

func (r *res) read() (p.ReadResponse, error) {
	return r.s.Read(p.ReadRequest{ID: r.id, Urn: r.urn, Properties: r.state})
}

func (r *res) delete() error {
	return r.s.Delete(p.DeleteRequest{ID: r.id, Urn: r.urn, Properties: r.state})
}

// out reads a string output.
func (r *res) out(key string) string {
	v := r.state.Get(key)
	if v.IsString() {
		return v.AsString()
	}

	return ""
}
