package talosapi_test

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	simtalos "github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// The lifecycle tests run the package against the lab's simulated Talos
// nodes (tests/lab/talos), which behave like Talos 1.12 for these calls.

var (
	bundleOnce sync.Once
	bundle     *secrets.Bundle
	bundleErr  error
)

func simBundle(t *testing.T) *secrets.Bundle {
	t.Helper()

	bundleOnce.Do(func() { bundle, bundleErr = talosconfig.NewSecrets(simtest.Version, time.Now()) })

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
		Secrets: simBundle(t), TalosVersion: simtest.Version, InstallDisk: disk, InstallImage: simtest.Installer(version),
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
		Progress: func(msg string) { t.Log(msg) },
	}
}

// oneCP is the lab of a single-node test: a simulator of its own with cp1
// booted (maintenance mode) at its address block's .2 from an scsi0 disk,
// a context the test's limit bounds, simOptions, and cp1 as the target with
// admin credentials.
type oneCP struct {
	sim     *simtalos.Sim
	ip      func(host int) netip.Addr // the lab's address block
	node    *simtalos.Node
	addr    netip.Addr // ip(2)
	version string     // the Talos version cp1 boots
	ctx     context.Context
	o       talosapi.Options
	target  talosapi.Target
}

// bootOneCP starts that lab: cp1 boots Talos version; the context ends
// after limit or with the test.
func bootOneCP(t *testing.T, version string, limit time.Duration) *oneCP {
	t.Helper()
	s := simtest.Start(t)
	ip := simtest.AddressBlock()
	addr := ip(2)
	node := simtest.BootVersion(s, "cp1", addr, "scsi0", version)

	ctx, cancel := context.WithTimeout(context.Background(), limit)
	t.Cleanup(cancel)

	return &oneCP{
		sim: s, ip: ip, node: node, addr: addr, version: version, ctx: ctx, o: simOptions(t),
		target: talosapi.Target{Node: addr.String(), Creds: adminCreds(t)},
	}
}

// config is cp1's control plane configuration (install disk /dev/sda) with patches.
func (c *oneCP) config(t *testing.T, patches ...string) []byte {
	t.Helper()
	return nodeConfig(t, talosconfig.RoleControlPlane, c.addr, "/dev/sda", c.version, patches...)
}

// applyConfig applies config() to cp1, failing the test on an error.
func (c *oneCP) applyConfig(t *testing.T) {
	t.Helper()
	if _, err := talosapi.Apply(c.ctx, c.target, talosapi.ApplyRequest{Config: c.config(t)}, c.o); err != nil {
		t.Fatal(err)
	}
}

// healthyControlPlane is bootOneCP's lab with cp1 configured, bootstrapped
// and healthy: the Kubernetes API the manifest tests work against, through
// the returned admin kubeconfig.
func healthyControlPlane(t *testing.T, limit time.Duration) (*oneCP, *talosapi.Kubeconfig) {
	t.Helper()
	c := bootOneCP(t, simtest.Version, limit)
	c.applyConfig(t)
	if _, err := talosapi.Bootstrap(c.ctx, c.target, c.o); err != nil {
		t.Fatal(err)
	}
	kc, err := talosapi.FetchKubeconfig(c.ctx, c.target, "", c.o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := talosapi.WaitHealthy(c.ctx, talosapi.HealthRequest{ControlPlanes: []string{c.target.Node}, Creds: c.target.Creds, Kubeconfig: kc.Raw}, c.o); err != nil {
		t.Fatal(err)
	}
	return c, kc
}

// cpsLab is the lab of the etcd membership tests: a simulator of its own
// with n control planes cp1..cpN at its address block's .2, .3, ...,
// configured, bootstrapped through cp1 and healthy, and a context the
// test's limit bounds.
type cpsLab struct {
	sim   *simtalos.Sim
	nodes []*simtalos.Node
	cps   []string // the control planes' addresses, cp1 first
	ctx   context.Context
	o     talosapi.Options
	creds *talosapi.Credentials
}

func healthyControlPlanes(t *testing.T, n int, limit time.Duration) *cpsLab {
	t.Helper()
	s := simtest.Start(t)
	ip := simtest.AddressBlock()

	ctx, cancel := context.WithTimeout(context.Background(), limit)
	t.Cleanup(cancel)

	l := &cpsLab{sim: s, ctx: ctx, o: simOptions(t), creds: adminCreds(t)}
	for i := range n {
		l.nodes = append(l.nodes, simtest.Boot(s, fmt.Sprintf("cp%d", i+1), ip(2+i), "scsi0"))
		l.cps = append(l.cps, ip(2+i).String())
	}

	for _, cp := range l.cps {
		if _, err := talosapi.Apply(ctx, l.target(cp), talosapi.ApplyRequest{Config: nodeConfig(t, talosconfig.RoleControlPlane, ip(2), "/dev/sda", simtest.Version)}, l.o); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := talosapi.Bootstrap(ctx, l.target(l.cps[0]), l.o); err != nil {
		t.Fatal(err)
	}
	if _, err := talosapi.WaitHealthy(ctx, talosapi.HealthRequest{ControlPlanes: l.cps, Creds: l.creds}, l.o); err != nil {
		t.Fatal(err)
	}
	return l
}

// target is node with the admin credentials.
func (l *cpsLab) target(node string) talosapi.Target {
	return talosapi.Target{Node: node, Creds: l.creds}
}
