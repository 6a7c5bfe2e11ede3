package provider

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/blang/semver"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/integration"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

func server(t *testing.T) integration.Server {
	t.Helper()
	prov, err := New()
	if err != nil {
		t.Fatal(err)
	}
	s, err := integration.NewServer(context.Background(), Name, semver.MustParse("1.0.0"), integration.WithProvider(prov))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The provider's DiffConfig is ours, not infer's replace-on-any-change
// (pulumi-go-provider issue #409): a replaced provider replaces every VM.
func TestProviderConfigChangesNeverReplace(t *testing.T) {
	t.Parallel()
	s := server(t)
	old := property.NewMap(map[string]property.Value{
		"endpoint": property.New("https://pve.example.com:8006"),
		"apiToken": property.New("root@pam!pulumi=old-secret").WithSecret(true),
	})
	with := func(k string, v property.Value) property.Map { return old.Set(k, v) }
	for name, c := range map[string]struct {
		news    property.Map
		changed bool
	}{
		"token rotated":       {with("apiToken", property.New("root@pam!pulumi=new-secret").WithSecret(true)), false},
		"equivalent endpoint": {with("endpoint", property.New("https://PVE.example.com:8006/api2/json/")), false},
		"other endpoint":      {with("endpoint", property.New("https://pve2.example.com:8006")), true},
		"insecure turned on":  {with("insecure", property.New(true)), true},
	} {
		resp, err := s.DiffConfig(p.DiffRequest{Urn: "urn:pulumi:dev::proj::pulumi:providers:proxmoxtalos::default",
			OldInputs: old, State: old, Inputs: c.news})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if resp.HasChanges != c.changed {
			t.Errorf("%s: HasChanges = %v, want %v (%v)", name, resp.HasChanges, c.changed, resp.DetailedDiff)
		}
		for k, d := range resp.DetailedDiff {
			if d.Kind == p.UpdateReplace || d.Kind == p.AddReplace || d.Kind == p.DeleteReplace {
				t.Errorf("%s: %s replaces the provider", name, k)
			}
		}
	}
}

func TestProviderSchemaMarksTheTokenSecret(t *testing.T) {
	t.Parallel()
	resp, err := server(t).GetSchema(p.GetSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Config struct {
			Variables map[string]struct {
				Secret      bool   `json:"secret"`
				Description string `json:"description"`
			} `json:"variables"`
		} `json:"config"`
		Resources map[string]json.RawMessage `json:"resources"`
	}
	if err := json.Unmarshal([]byte(resp.Schema), &schema); err != nil {
		t.Fatal(err)
	}
	vars := schema.Config.Variables
	if !vars["apiToken"].Secret {
		t.Error("apiToken is not marked secret in the schema")
	}
	for _, k := range []string{"endpoint", "apiToken", "insecure", "caCert", "requestTimeout"} {
		if vars[k].Description == "" {
			t.Errorf("config %s has no description", k)
		}
	}
	for _, r := range []string{"proxmoxtalos:proxmox:VirtualMachine", "proxmoxtalos:proxmox:DownloadFile"} {
		if _, ok := schema.Resources[r]; !ok {
			t.Errorf("resource %s is not registered", r)
		}
	}
}
