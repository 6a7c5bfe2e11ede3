package talos

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blang/semver"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi-go-provider/integration"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

const (
	secretsToken = "proxmoxtalos:talos:MachineSecrets"
	configToken  = "proxmoxtalos:talos:getMachineConfiguration"
	clientToken  = "proxmoxtalos:talos:getClientConfiguration"
	factoryToken = "proxmoxtalos:talos:getImageFactory"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fakeClock is a settable clock for MachineSecrets.
type fakeClock struct{ unix atomic.Int64 }

func newClock(t time.Time) *fakeClock {
	c := &fakeClock{}
	c.set(t)
	return c
}

func (c *fakeClock) set(t time.Time)     { c.unix.Store(t.Unix()) }
func (c *fakeClock) now() time.Time      { return time.Unix(c.unix.Load(), 0).UTC() }
func (c *fakeClock) add(d time.Duration) { c.set(c.now().Add(d)) }

func server(t *testing.T, clock *fakeClock) integration.Server {
	t.Helper()
	prov, err := infer.NewProviderBuilder().
		WithResources(infer.Resource(&MachineSecrets{Now: clock.now})).
		WithFunctions(
			infer.Function(&GetMachineConfiguration{}),
			infer.Function(&GetClientConfiguration{}),
			infer.Function(&GetImageFactory{}),
		).
		Build()
	if err != nil {
		t.Fatal(err)
	}
	prov = framework.WithPreviewUnknowns(prov, RenewalPreview(clock.now))
	s, err := integration.NewServer(t.Context(), "proxmoxtalos", semver.MustParse("0.1.0"), integration.WithProvider(prov))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// One bundle per test binary: RSA key generation is slow.
var (
	bundleOnce sync.Once
	bundleYAML string
)

func testSecretsYAML(t *testing.T) string {
	t.Helper()
	bundleOnce.Do(func() {
		b, err := talosconfig.NewSecrets("v1.12.5", t0)
		if err != nil {
			panic(err)
		}
		bundleYAML, err = talosconfig.MarshalSecrets(b)
		if err != nil {
			panic(err)
		}
	})
	return bundleYAML
}

func str(s string) property.Value { return property.New(s) }

func strs(ss ...string) property.Value {
	vs := make([]property.Value, len(ss))
	for i, s := range ss {
		vs[i] = property.New(s)
	}
	return property.New(vs)
}

// plain unwraps a secret value.
func plain(v property.Value) property.Value {
	if v.Secret() {
		return v.WithSecret(false)
	}
	return v
}
