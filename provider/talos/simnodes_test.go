package talos

import (
	"net/netip"
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

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos/simtest"
)

// Lifecycle tests drive the node-facing resources through pulumi-go-provider's
// integration server against the lab's simulated Talos nodes.

// simCluster is one cluster's secrets and client configuration.
type simCluster struct {
	t        *testing.T
	endpoint netip.Addr
	client   ClientConfiguration
	bundle   *secrets.Bundle
}

func newSimCluster(t *testing.T, endpoint netip.Addr) *simCluster {
	t.Helper()

	applyBundleOnce.Do(func() { applyBundle, applyBundleErr = talosconfig.NewSecrets(simtest.Version, applyTestNow) })

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
		Secrets: c.bundle, TalosVersion: simtest.Version, InstallDisk: disk, InstallImage: simtest.Installer(version),
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
var fastOpts = talosapi.Options{PollMin: 5 * time.Millisecond, PollMax: 50 * time.Millisecond, AttemptTimeout: 5 * time.Second}

func nodeServer(t *testing.T, kubeNow func() time.Time) integration.Server {
	t.Helper()

	prov, err := infer.NewProviderBuilder().
		WithResources(
			framework.Resource(&ConfigurationApply{opts: fastOpts}), // as provider.New registers it
			infer.Resource(&Bootstrap{opts: fastOpts}),
			infer.Resource(&Kubeconfig{opts: fastOpts, now: kubeNow}),
			infer.Resource(&ClusterHealth{opts: fastOpts}),
			infer.Resource(&ControlPlaneComponents{opts: fastOpts}),
		).
		Build()
	if err != nil {
		t.Fatal(err)
	}

	// The states keep no copies of some inputs, as in provider.New.
	prov = StateCopies().Wrap(prov)

	s, err := integration.NewServer(t.Context(), "proxmoxtalos", semver.MustParse("0.0.1"), integration.WithProvider(prov))
	if err != nil {
		t.Fatal(err)
	}

	return s
}

// res drives one resource through the provider like the engine does: its
// state, and the inputs of its last create or update, which the engine
// hands Diff, Update and Delete as old inputs and a refresh's Read. (Check
// gets the state as old inputs here, unlike the engine.)
type res struct {
	t      *testing.T
	s      integration.Server
	urn    presource.URN
	id     string
	state  property.Map
	inputs property.Map
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
		r.id, r.state, r.inputs = resp.ID, resp.Properties, checked
	}

	return err
}

// diff checks new inputs and diffs them against the state.
func (r *res) diff(inputs map[string]property.Value) (property.Map, p.DiffResponse) {
	r.t.Helper()

	checked := r.check(inputs)

	d, err := r.s.Diff(p.DiffRequest{ID: r.id, Urn: r.urn, State: r.state, OldInputs: r.inputs, Inputs: checked})
	if err != nil {
		r.t.Fatal(err)
	}

	return checked, d
}

func (r *res) update(checked property.Map) error {
	r.t.Helper()

	if _, err := r.s.Update(p.UpdateRequest{ID: r.id, Urn: r.urn, State: r.state, OldInputs: r.inputs, Inputs: checked, DryRun: true}); err != nil {
		r.t.Fatalf("preview update: %v", err)
	}

	resp, err := r.s.Update(p.UpdateRequest{ID: r.id, Urn: r.urn, State: r.state, OldInputs: r.inputs, Inputs: checked})
	if resp.Properties.Len() > 0 {
		r.state, r.inputs = resp.Properties, checked
	}

	return err
}

func (r *res) read() (p.ReadResponse, error) {
	return r.s.Read(p.ReadRequest{ID: r.id, Urn: r.urn, Properties: r.state, Inputs: r.inputs})
}

func (r *res) delete() error {
	return r.s.Delete(p.DeleteRequest{ID: r.id, Urn: r.urn, Properties: r.state, OldInputs: r.inputs})
}

// out reads a string output.
func (r *res) out(key string) string {
	v := r.state.Get(key)
	if v.IsString() {
		return v.AsString()
	}

	return ""
}
