package talos

import (
	"strings"
	"testing"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/integration"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

var secretsURN = presource.NewURN("test", "proj", "", tokens.Type(secretsToken), "secrets")

// Lifecycle: create, an in-place Talos version bump that keeps the bundle,
// delete. Outputs are secret and the bundle survives the update.
func TestMachineSecretsLifecycle(t *testing.T) {
	t.Parallel()
	clock := newClock(t0)
	s := server(t, clock)
	var created property.Map
	integration.LifeCycleTest{
		Resource: secretsToken,
		Create: integration.Operation{
			Inputs: property.NewMap(map[string]property.Value{"talosVersion": str("v1.11.5")}),
			Hook: func(_, out property.Map) {
				created = out
				for _, k := range []string{"machineSecrets", "clientConfiguration"} {
					if !out.Get(k).Secret() {
						t.Errorf("output %s is not secret", k)
					}
				}
				if out.Get("clientCertificateLifetimeHours").AsNumber() != 8760 || out.Get("clientCertificateRenewalWindowHours").AsNumber() != 720 {
					t.Errorf("defaults not applied: %v", out)
				}
				if _, err := talosconfig.UnmarshalSecrets(plain(out.Get("machineSecrets")).AsString()); err != nil {
					t.Errorf("machineSecrets is not a readable bundle: %v", err)
				}
				if got := out.Get("clientCertificateExpiry").AsString(); got != t0.Add(8760*time.Hour).Format(time.RFC3339) {
					t.Errorf("expiry %s", got)
				}
			},
		},
		Updates: []integration.Operation{{
			Inputs: property.NewMap(map[string]property.Value{"talosVersion": str("1.12.5")}),
			Hook: func(_, out property.Map) {
				if plain(out.Get("machineSecrets")).AsString() != plain(created.Get("machineSecrets")).AsString() {
					t.Errorf("a Talos version change regenerated the secrets")
				}
				if out.Get("talosVersion").AsString() != "v1.12.5" {
					t.Errorf("talosVersion not normalised: %v", out.Get("talosVersion"))
				}
			},
		}},
	}.Run(t, s)
}

func createSecrets(t *testing.T, s integration.Server, inputs map[string]property.Value) property.Map {
	t.Helper()
	check, err := s.Check(p.CheckRequest{Urn: secretsURN, Inputs: property.NewMap(inputs)})
	if err != nil || len(check.Failures) > 0 {
		t.Fatalf("check: %v %v", err, check.Failures)
	}
	resp, err := s.Create(p.CreateRequest{Urn: secretsURN, Properties: check.Inputs})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return resp.Properties
}

func diffSecrets(t *testing.T, s integration.Server, state property.Map, inputs map[string]property.Value) p.DiffResponse {
	t.Helper()
	check, err := s.Check(p.CheckRequest{Urn: secretsURN, State: state, Inputs: property.NewMap(inputs)})
	if err != nil || len(check.Failures) > 0 {
		t.Fatalf("check: %v %v", err, check.Failures)
	}
	diff, err := s.Diff(p.DiffRequest{ID: "x", Urn: secretsURN, State: state, Inputs: check.Inputs})
	if err != nil {
		t.Fatalf("diff: %v", err)
	}
	return diff
}

// The certificate is renewed by an up once inside the window, not before;
// the bundle never changes; a second preview after the renewal is clean.
func TestMachineSecretsRenewsClientCertificate(t *testing.T) {
	t.Parallel()
	clock := newClock(t0)
	s := server(t, clock)
	inputs := map[string]property.Value{
		"talosVersion":                        str("v1.12.5"),
		"clientCertificateLifetimeHours":      property.New(240.0),
		"clientCertificateRenewalWindowHours": property.New(48.0),
	}
	state := createSecrets(t, s, inputs)

	if d := diffSecrets(t, s, state, inputs); d.HasChanges {
		t.Fatalf("fresh resource shows changes: %v", d.DetailedDiff)
	}
	clock.add(240*time.Hour - 48*time.Hour - time.Minute)
	if d := diffSecrets(t, s, state, inputs); d.HasChanges {
		t.Fatalf("renewal before the window: %v", d.DetailedDiff)
	}
	clock.add(2 * time.Minute)
	d := diffSecrets(t, s, state, inputs)
	if !d.HasChanges || d.DetailedDiff["clientConfiguration"].Kind != p.Update || len(d.DetailedDiff) != 1 {
		t.Fatalf("inside the window: diff %v, want an in-place update of clientConfiguration", d.DetailedDiff)
	}
	check, _ := s.Check(p.CheckRequest{Urn: secretsURN, State: state, Inputs: property.NewMap(inputs)})
	// The preview shows the new certificate as unknown, so that resources
	// that receive it show their change too.
	dry, err := s.Update(p.UpdateRequest{ID: "x", Urn: secretsURN, State: state, Inputs: check.Inputs, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if cc := dry.Properties.Get("clientConfiguration"); !cc.IsComputed() || !cc.Secret() || !dry.Properties.Get("clientCertificateExpiry").IsComputed() {
		t.Fatalf("renewal preview: clientConfiguration %v, expiry %v; want unknown (secret)", cc.IsComputed(), dry.Properties.Get("clientCertificateExpiry"))
	}
	if dry.Properties.Get("machineSecrets").IsComputed() {
		t.Errorf("renewal preview: the bundle is unknown, but it does not change")
	}
	upd, err := s.Update(p.UpdateRequest{ID: "x", Urn: secretsURN, State: state, Inputs: check.Inputs})
	if err != nil {
		t.Fatal(err)
	}
	newState := upd.Properties
	oldCC := plain(state.Get("clientConfiguration")).AsMap()
	newCC := plain(newState.Get("clientConfiguration")).AsMap()
	if plain(newCC.Get("clientCertificate")).AsString() == plain(oldCC.Get("clientCertificate")).AsString() ||
		plain(newCC.Get("clientKey")).AsString() == plain(oldCC.Get("clientKey")).AsString() {
		t.Errorf("certificate and key were not renewed")
	}
	if plain(newCC.Get("caCertificate")).AsString() != plain(oldCC.Get("caCertificate")).AsString() ||
		plain(newState.Get("machineSecrets")).AsString() != plain(state.Get("machineSecrets")).AsString() {
		t.Errorf("renewal changed the CA or the bundle")
	}
	if !newState.Get("clientConfiguration").Secret() || !newState.Get("machineSecrets").Secret() {
		t.Errorf("outputs lost their secretness on update")
	}
	wantExpiry := clock.now().Add(240 * time.Hour).Format(time.RFC3339)
	if newState.Get("clientCertificateExpiry").AsString() != wantExpiry {
		t.Errorf("expiry %v, want %s", newState.Get("clientCertificateExpiry"), wantExpiry)
	}
	if d := diffSecrets(t, s, newState, inputs); d.HasChanges {
		t.Errorf("second preview after renewal shows changes: %v", d.DetailedDiff)
	}
}

func TestMachineSecretsImportAndReplace(t *testing.T) {
	t.Parallel()
	s := server(t, newClock(t0))
	bundle := testSecretsYAML(t)
	state := createSecrets(t, s, map[string]property.Value{"importSecrets": property.New(bundle).WithSecret(true)})
	if plain(state.Get("machineSecrets")).AsString() != bundle {
		t.Errorf("imported bundle not kept verbatim")
	}
	d := diffSecrets(t, s, state, map[string]property.Value{})
	if k := d.DetailedDiff["importSecrets"].Kind; k != p.UpdateReplace && k != p.DeleteReplace {
		t.Errorf("dropping the imported bundle: diff %v, want replace", d.DetailedDiff)
	}
}

func TestMachineSecretsCheck(t *testing.T) {
	t.Parallel()
	s := server(t, newClock(t0))
	for _, tc := range []struct {
		name     string
		inputs   map[string]property.Value
		property string
		reason   string
	}{
		{"old talos", map[string]property.Value{"talosVersion": str("v1.6.0")}, "talosVersion", "v1.8.0 to v1.14.x"},
		{"negative lifetime", map[string]property.Value{"clientCertificateLifetimeHours": property.New(-5.0)}, "clientCertificateLifetimeHours", "positive"},
		{"window too long", map[string]property.Value{"clientCertificateLifetimeHours": property.New(24.0), "clientCertificateRenewalWindowHours": property.New(24.0)},
			"clientCertificateRenewalWindowHours", "shorter than"},
		{"bad import", map[string]property.Value{"importSecrets": property.New("cluster: {id: x, secret: hunter2}\n").WithSecret(true)}, "importSecrets", "incomplete"},
	} {
		resp, err := s.Check(p.CheckRequest{Urn: secretsURN, Inputs: property.NewMap(tc.inputs)})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(resp.Failures) != 1 || resp.Failures[0].Property != tc.property || !strings.Contains(resp.Failures[0].Reason, tc.reason) {
			t.Errorf("%s: failures %+v, want %s containing %q", tc.name, resp.Failures, tc.property, tc.reason)
		}
		for _, f := range resp.Failures {
			if strings.Contains(f.Reason, "hunter2") {
				t.Errorf("%s: failure quotes a secret", tc.name)
			}
		}
	}
}

// Previews: on create the generated outputs are unknown; on a Talos version
// bump the bundle stays known, so configurations that depend on it can be
// previewed path by path.
func TestMachineSecretsPreviewKnownness(t *testing.T) {
	t.Parallel()
	s := server(t, newClock(t0))
	check, err := s.Check(p.CheckRequest{Urn: secretsURN, Inputs: property.NewMap(map[string]property.Value{"talosVersion": str("v1.11.5")})})
	if err != nil {
		t.Fatal(err)
	}
	preview, err := s.Create(p.CreateRequest{Urn: secretsURN, Properties: check.Inputs, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !preview.Properties.Get("machineSecrets").IsComputed() {
		t.Errorf("create preview: machineSecrets = %v, want unknown", preview.Properties.Get("machineSecrets"))
	}
	state := createSecrets(t, s, map[string]property.Value{"talosVersion": str("v1.11.5")})
	check, _ = s.Check(p.CheckRequest{Urn: secretsURN, State: state, Inputs: property.NewMap(map[string]property.Value{"talosVersion": str("v1.12.5")})})
	upd, err := s.Update(p.UpdateRequest{ID: "x", Urn: secretsURN, State: state, Inputs: check.Inputs, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	got := upd.Properties.Get("machineSecrets")
	if got.IsComputed() || plain(got).AsString() != plain(state.Get("machineSecrets")).AsString() {
		t.Errorf("update preview: machineSecrets unknown or changed")
	}
	// No renewal due: the client configuration stays known too.
	if upd.Properties.Get("clientConfiguration").IsComputed() {
		t.Errorf("update preview without a due renewal: clientConfiguration unknown")
	}
}

// Refresh keeps the resource and its state: nothing outside Pulumi holds it.
func TestMachineSecretsRefreshKeepsState(t *testing.T) {
	t.Parallel()
	s := server(t, newClock(t0))
	state := createSecrets(t, s, map[string]property.Value{})
	read, err := s.Read(p.ReadRequest{ID: "talos-x", Urn: secretsURN, Properties: state})
	if err != nil {
		t.Fatal(err)
	}
	if read.ID != "talos-x" || plain(read.Properties.Get("machineSecrets")).AsString() != plain(state.Get("machineSecrets")).AsString() {
		t.Errorf("refresh changed or dropped the resource: id %q", read.ID)
	}
}
