package talos_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/blang/semver"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/integration"

	"github.com/proxmoxtalos/proxmoxtalos/provider"
)

// TestSchemaMarksCredentialsSecret checks, in the generated schema, that
// every property of the node-facing resources that carries a credential or
// a configuration with secrets is marked secret.
func TestSchemaMarksCredentialsSecret(t *testing.T) {
	t.Parallel()

	prov, err := provider.New()
	if err != nil {
		t.Fatal(err)
	}

	s, err := integration.NewServer(context.Background(), provider.Name, semver.MustParse("0.0.1"), integration.WithProvider(prov))
	if err != nil {
		t.Fatal(err)
	}

	resp, err := s.GetSchema(p.GetSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}

	var schema struct {
		Resources map[string]struct {
			InputProperties map[string]struct {
				Secret bool `json:"secret"`
			} `json:"inputProperties"`
			Properties map[string]struct {
				Secret bool `json:"secret"`
			} `json:"properties"`
		} `json:"resources"`
		Types map[string]struct {
			Properties map[string]struct {
				Secret bool `json:"secret"`
			} `json:"properties"`
		} `json:"types"`
	}
	if err := json.Unmarshal([]byte(resp.Schema), &schema); err != nil {
		t.Fatal(err)
	}

	secret := map[string][]string{
		"proxmoxtalos:talos:ConfigurationApply": {"clientConfiguration", "machineConfiguration"},
		"proxmoxtalos:talos:Bootstrap":          {"clientConfiguration"},
		"proxmoxtalos:talos:Kubeconfig":         {"clientConfiguration", "kubeconfig"},
		"proxmoxtalos:talos:ClusterHealth":      {"clientConfiguration", "kubeconfig"},
	}

	for token, props := range secret {
		r, ok := schema.Resources[token]
		if !ok {
			t.Errorf("schema has no resource %s", token)

			continue
		}

		for _, name := range props {
			in, isInput := r.InputProperties[name]
			out := r.Properties[name]

			if (isInput && !in.Secret) || !out.Secret {
				t.Errorf("%s.%s is not secret (input %v, output %v)", token, name, in.Secret, out.Secret)
			}
		}
	}

	if !schema.Types["proxmoxtalos:talos:ClientConfiguration"].Properties["clientKey"].Secret {
		t.Error("ClientConfiguration.clientKey is not secret")
	}
}
