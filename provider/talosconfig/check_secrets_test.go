package talosconfig

import (
	"encoding/pem"
	"maps"
	"slices"
	"testing"

	"go.yaml.in/yaml/v4"
)

// The bundle a preview checks configurations with has every field a real
// one has (a machinery release whose bundle grows a contract-dependent
// field fails here), an ECDSA service account key instead of RSA, and
// makes configurations that generate and validate like the real ones.
func TestCheckSecretsShapedLikeReal(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"v1.8.0", "v1.12.5", DefaultTalosVersion} {
		check, err := NewCheckSecrets(v, testNow)
		if err != nil {
			t.Fatal(err)
		}
		if err := check.Validate(); err != nil {
			t.Fatalf("%s: the check bundle does not validate: %v", v, err)
		}
		if got, want := yamlPaths(t, check), yamlPaths(t, testBundle(t, v)); !slices.Equal(got, want) {
			t.Errorf("%s: the check bundle has fields %v, a real one %v", v, got, want)
		}
		if block, _ := pem.Decode(check.Certs.K8sServiceAccount.Key); block == nil || block.Type != "EC PRIVATE KEY" {
			t.Errorf("%s: the check bundle's service account key is not ECDSA", v)
		}
		for _, role := range []Role{RoleControlPlane, RoleWorker} {
			in := baseInput(t, v, role)
			in.Secrets = check
			if _, err := Generate(in); err != nil {
				t.Errorf("%s %s: a configuration with the check bundle: %v", v, role, err)
			}
		}
	}
}

// yamlPaths lists the paths of a bundle's YAML form that hold a value.
func yamlPaths(t *testing.T, b any) []string {
	t.Helper()
	y, err := yaml.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(y, &m); err != nil {
		t.Fatal(err)
	}
	paths := map[string]bool{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(prefix+"."+k, e)
			}
		default:
			if x != nil && x != "" {
				paths[prefix] = true
			}
		}
	}
	walk("", m)
	return slices.Sorted(maps.Keys(paths))
}
