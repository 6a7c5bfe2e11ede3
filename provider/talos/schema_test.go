package talos

import (
	"encoding/json"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
)

// obj walks the schema JSON.
type obj map[string]any

func (o obj) get(keys ...string) obj {
	cur := o
	for _, k := range keys {
		next, _ := cur[k].(map[string]any)
		cur = next
	}
	return cur
}

func (o obj) secret() bool { b, _ := o["secret"].(bool); return b }

// Every secret is marked secret in the schema, and every resource, function
// and property is described.
func TestSchemaSecretsAndDescriptions(t *testing.T) {
	t.Parallel()
	s := server(t, newClock(t0))
	resp, err := s.GetSchema(p.GetSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var spec obj
	if err := json.Unmarshal([]byte(resp.Schema), &spec); err != nil {
		t.Fatal(err)
	}

	res := spec.get("resources", secretsToken)
	if res == nil {
		t.Fatalf("schema lacks %s", secretsToken)
	}
	for _, k := range []string{"machineSecrets", "clientConfiguration"} {
		if !res.get("properties", k).secret() {
			t.Errorf("MachineSecrets output %s is not secret in the schema", k)
		}
	}
	if !res.get("inputProperties", "importSecrets").secret() {
		t.Errorf("MachineSecrets input importSecrets is not secret")
	}
	if d := res.get("inputProperties", "clientCertificateLifetimeHours")["default"]; d != 8760.0 {
		t.Errorf("lifetime default = %v", d)
	}
	checkDescribed(t, secretsToken, res, res.get("properties"), res.get("inputProperties"))

	for token, secrets := range map[string][]string{
		configToken:  {"machineConfiguration"},
		clientToken:  {"talosConfig"},
		factoryToken: nil,
	} {
		fn := spec.get("functions", token)
		if fn == nil {
			t.Fatalf("schema lacks %s", token)
		}
		for _, k := range secrets {
			if !fn.get("outputs", "properties", k).secret() {
				t.Errorf("%s output %s is not secret", token, k)
			}
		}
		checkDescribed(t, token, fn, fn.get("inputs", "properties"), fn.get("outputs", "properties"))
	}
	if !spec.get("functions", configToken, "inputs", "properties", "machineSecrets").secret() ||
		!spec.get("functions", clientToken, "inputs", "properties", "clientConfiguration").secret() {
		t.Errorf("secret function inputs are not marked secret")
	}
	if !spec.get("types", "proxmoxtalos:talos:ClientConfiguration", "properties", "clientKey").secret() {
		t.Errorf("ClientConfiguration.clientKey is not secret")
	}
	if enum, _ := spec.get("types", "proxmoxtalos:talos:MachineType")["enum"].([]any); len(enum) != 2 {
		t.Errorf("MachineType enum = %v", enum)
	}
}

func checkDescribed(t *testing.T, token string, item obj, propSets ...obj) {
	t.Helper()
	if d, _ := item["description"].(string); d == "" {
		t.Errorf("%s has no description", token)
	}
	for _, props := range propSets {
		if len(props) == 0 {
			t.Errorf("%s: no properties found", token)
		}
		for name := range props {
			if d, _ := props.get(name)["description"].(string); d == "" {
				t.Errorf("%s property %s has no description", token, name)
			}
		}
	}
}
