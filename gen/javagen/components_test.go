package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// withComponent is the shared fixture plus a component with a required and an optional
// secret output and a plain one, like TalosCluster.
func withComponent(t *testing.T) []byte {
	t.Helper()
	var spec map[string]any
	if err := json.Unmarshal(fixture(t), &spec); err != nil {
		t.Fatal(err)
	}
	str := map[string]any{"type": "string"}
	secret := map[string]any{"type": "string", "secret": true}
	spec["resources"].(map[string]any)["proxmoxtalos:index:Cluster"] = map[string]any{
		"isComponent":     true,
		"properties":      map[string]any{"kubeconfig": secret, "backup": secret, "endpoint": str},
		"required":        []string{"kubeconfig", "endpoint"},
		"inputProperties": map[string]any{"name": str},
	}
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const clusterJava = "src/main/java/com/proxmoxtalos/proxmoxtalos/Cluster.java"

func TestComponentSecretOutputsAreSecretGetters(t *testing.T) {
	t.Parallel()
	files, err := generate(withComponent(t))
	if err != nil {
		t.Fatal(err)
	}
	src := string(files[clusterJava])
	if !strings.Contains(src, "extends com.pulumi.resources.ComponentResource") {
		t.Fatalf("%s is not the component class:\n%s", clusterJava, src)
	}
	if strings.Contains(src, "additionalSecretOutputs") {
		t.Errorf("component still calls additionalSecretOutputs, which ComponentResourceOptions.Builder lacks:\n%s", src)
	}
	for _, want := range []string{
		"return this.kubeconfig.asSecret();",
		"return Codegen.optional(this.backup.asSecret());",
		"return this.endpoint;", // not secret: untouched
	} {
		if !strings.Contains(src, want) {
			t.Errorf("component class lacks %q:\n%s", want, src)
		}
	}
	// Custom resources keep the generator's option: CustomResourceOptions has it.
	provider := string(files["src/main/java/com/proxmoxtalos/proxmoxtalos/Provider.java"])
	if !strings.Contains(provider, ".additionalSecretOutputs(List.of(\n                \"apiToken\"\n") ||
		strings.Contains(provider, "asSecret()") {
		t.Errorf("the provider resource's secret option changed:\n%s", provider)
	}
}

// A generator whose output no longer has the expected shape stops the build instead of
// leaving a secret output plain. The generated Provider class (a secret apiToken output, with
// the option call) stands in for a component class here.
func TestSecureComponentRefusesUnexpectedShapes(t *testing.T) {
	t.Parallel()
	files, err := generate(fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	provider := string(files["src/main/java/com/proxmoxtalos/proxmoxtalos/Provider.java"])
	got, err := secureComponent(provider, []string{"apiToken"})
	if err != nil || !strings.Contains(got, "return Codegen.optional(this.apiToken.asSecret());") ||
		strings.Contains(got, "additionalSecretOutputs") {
		t.Errorf("the expected shape was not rewritten (err %v):\n%s", err, got)
	}
	for name, tc := range map[string]struct {
		src     string
		secrets []string
		want    string
	}{
		"list differs":   {provider, []string{"apiToken", "other"}, "the schema's secret outputs are [apiToken other]"},
		"no option call": {strings.ReplaceAll(provider, "additionalSecretOutputs", "x"), []string{"apiToken"}, "found 0"},
		"no getter":      {strings.ReplaceAll(provider, "return Codegen.optional(this.apiToken);", "return null;"), []string{"apiToken"}, "want one getter returning this.apiToken"},
		"no field":       {strings.ReplaceAll(provider, `@Export(name="apiToken"`, `@Export(name="token"`), []string{"apiToken"}, `want one @Export field for output "apiToken"`},
	} {
		if _, err := secureComponent(tc.src, tc.secrets); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tc.want)
		}
	}
}
