// Package leakscan finds secret values in text: it collects every secret a
// Pulumi stack holds (from `pulumi stack export --show-secrets`), turns each
// into needles that survive re-encoding (PEM lines, base64 payloads, JSON
// escaping), and reports which needles a text contains. Findings name the
// secret's origin and length, never its value.
package leakscan

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// secretSig is the key Pulumi marks secret values with in state
// (sdk/go/common/resource/sig.Secret).
const secretSig = "1b47061264138c4ac30d75fd1eb44270"

const sigKey = "4dabf18193072939515e22adb298388d"

// Secret is one secret value and where it came from.
type Secret struct {
	Origin string // for example "urn:...::secrets outputs.machineSecrets Certs.OS.Key"
	Value  string
}

// Set is the secrets of a stack.
type Set struct {
	Secrets []Secret
}

// Add records a secret value found at origin and, for values that are
// documents with a known shape (machine configuration, secrets bundle,
// kubeconfig, talosconfig, API token), the secret parts inside them.
func (s *Set) Add(origin, value string) {
	value = strings.TrimSpace(value)
	if value == "" {
		return
	}

	if parts := documentSecrets(value); parts != nil {
		for _, p := range parts {
			s.Secrets = append(s.Secrets, Secret{Origin: origin + " " + p.Origin, Value: p.Value})
		}

		return
	}

	s.Secrets = append(s.Secrets, Secret{Origin: origin, Value: value})

	// USER@REALM!TOKENID=SECRET: the part after "=" is the secret.
	if i := strings.Index(value, "="); i > 0 && strings.Contains(value[:i], "!") && strings.Contains(value[:i], "@") {
		s.Secrets = append(s.Secrets, Secret{Origin: origin + " (token secret)", Value: value[i+1:]})
	}
}

// FromExport collects every secret value in a `pulumi stack export
// --show-secrets` document: each value Pulumi marks secret, in resource
// inputs and outputs and in the stack's provider configuration. Public
// parts of secret objects (a CA certificate next to a client key) are
// skipped by key name.
func FromExport(exportJSON []byte) (*Set, error) {
	var doc any
	if err := json.Unmarshal(exportJSON, &doc); err != nil {
		return nil, fmt.Errorf("stack export is not JSON: %w", err)
	}

	s := &Set{}
	walk(doc, "", false, s)

	return s, nil
}

// walk descends the export; inSecret is true below a secret marker.
func walk(v any, path string, inSecret bool, s *Set) {
	switch x := v.(type) {
	case map[string]any:
		if x[sigKey] == secretSig {
			var plain any
			if text, ok := x["plaintext"].(string); ok && json.Unmarshal([]byte(text), &plain) == nil {
				walk(plain, path, true, s)
			}

			return
		}

		for _, k := range slices.Sorted(maps.Keys(x)) {
			walk(x[k], path+"."+k, inSecret, s)
		}
	case []any:
		for i, e := range x {
			walk(e, fmt.Sprintf("%s[%d]", path, i), inSecret, s)
		}
	case string:
		if inSecret && !publicKey(path) && !isTimestamp(x) {
			s.Add(path, x)
		}
	}
}

// isTimestamp tells a time (a certificate expiry, secret only because it
// was derived from a secret input) from a credential.
func isTimestamp(v string) bool {
	_, err := time.Parse(time.RFC3339, v)
	return err == nil
}

// publicKey tells whether a field of a secret object is public by nature.
func publicKey(path string) bool {
	last := path[strings.LastIndexAny(path, ".]")+1:]
	switch strings.ToLower(last) {
	case "cacertificate", "certificate-authority-data", "ca", "endpoint", "endpoints", "server", "node", "nodes", "name", "context":
		return true
	}

	return false
}

// documentSecrets recognises documents whose secrets are only some of their
// leaves, and returns those; nil when the value is no such document.
func documentSecrets(value string) []Secret {
	if !strings.Contains(value, "\n") {
		return nil
	}

	switch {
	case strings.Contains(value, "trustdinfo:") && strings.Contains(value, "certs:"):
		return bundleSecrets(value)
	case strings.Contains(value, "kind: Config") && strings.Contains(value, "users:"):
		return yamlLeaves(value, "kubeconfig", func(path []string) bool {
			k := path[len(path)-1]
			return k == "client-key-data" || k == "client-certificate-data" || k == "token" || k == "password"
		})
	case strings.Contains(value, "contexts:") && strings.Contains(value, "key:"):
		return yamlLeaves(value, "talosconfig", func(path []string) bool {
			k := path[len(path)-1]
			return k == "key" || k == "crt"
		})
	case strings.Contains(value, "version: v1alpha1") && strings.Contains(value, "machine:"):
		var out []Secret
		for i, v := range talosconfig.SensitiveValues(value) {
			out = append(out, Secret{Origin: fmt.Sprintf("machine configuration secret #%d", i), Value: v})
		}

		return out
	}

	return nil
}

func bundleSecrets(value string) []Secret {
	b, err := talosconfig.UnmarshalSecrets(value)
	if err != nil {
		return []Secret{{Origin: "unparsable secrets bundle", Value: value}}
	}

	out := []Secret{
		{"bundle cluster.secret", b.Cluster.Secret},
		{"bundle secrets.bootstraptoken", b.Secrets.BootstrapToken},
		{"bundle secrets.aescbcencryptionsecret", b.Secrets.AESCBCEncryptionSecret},
		{"bundle secrets.secretboxencryptionsecret", b.Secrets.SecretboxEncryptionSecret},
		{"bundle trustdinfo.token", b.TrustdInfo.Token},
	}

	c := b.Certs
	for name, key := range map[string][]byte{
		"etcd": c.Etcd.Key, "k8s": c.K8s.Key, "k8saggregator": c.K8sAggregator.Key,
		"k8sserviceaccount": c.K8sServiceAccount.Key, "os": c.OS.Key,
	} {
		out = append(out, Secret{"bundle certs." + name + ".key", string(key)})
	}

	return out
}

// yamlLeaves returns the string leaves of a YAML document that keep says
// are secret.
func yamlLeaves(value, what string, keep func(path []string) bool) []Secret {
	var doc any
	if err := yaml.Unmarshal([]byte(value), &doc); err != nil {
		return []Secret{{Origin: "unparsable " + what, Value: value}}
	}

	var out []Secret

	var rec func(v any, path []string)
	rec = func(v any, path []string) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				rec(e, append(path, k))
			}
		case []any:
			for _, e := range x {
				rec(e, path)
			}
		case string:
			if len(path) > 0 && keep(path) {
				out = append(out, Secret{Origin: what + " " + strings.Join(path, "."), Value: x})
			}
		}
	}
	rec(doc, nil)

	return out
}

// Needle is a string whose presence in a text shows a secret leaked.
type Needle struct {
	Text   string
	Secret *Secret
}

// minNeedle is the shortest needle: shorter values (a port, "true") would
// match by chance.
const minNeedle = 8

// Needles turns each secret into the strings a leak of it would contain:
// the value; for PEM (or base64-encoded PEM) the base64 lines of a key, and
// the first and last lines of a certificate (its serial and its signature,
// unique to it; the middle lines hold the issuer, shared with the CA); the
// value as JSON escapes it.
func (s *Set) Needles() []Needle {
	var out []Needle

	seen := map[string]bool{}
	add := func(text string, sec *Secret) {
		if len(text) >= minNeedle && !seen[text] {
			seen[text] = true
			out = append(out, Needle{Text: text, Secret: sec})
		}
	}

	for i := range s.Secrets {
		sec := &s.Secrets[i]
		v := sec.Value

		add(v, sec)

		if b, err := json.Marshal(v); err == nil {
			add(strings.Trim(string(b), `"`), sec)
		}

		pem := v
		if decoded, err := base64.StdEncoding.DecodeString(v); err == nil && strings.Contains(string(decoded), "-----BEGIN") {
			pem = string(decoded)
		}

		for _, line := range pemNeedles(pem) {
			add(line, sec)
		}
	}

	return out
}

// pemNeedles returns the distinctive base64 lines of PEM blocks.
func pemNeedles(text string) []string {
	var out []string

	for _, block := range strings.Split(text, "-----BEGIN ")[1:] {
		header, rest, _ := strings.Cut(block, "\n")
		body, _, _ := strings.Cut(rest, "-----END")

		var lines []string
		for _, l := range strings.Split(body, "\n") {
			if l = strings.TrimSpace(l); len(l) >= 32 {
				lines = append(lines, l)
			}
		}

		if strings.HasPrefix(header, "CERTIFICATE") && len(lines) > 3 {
			lines = []string{lines[0], lines[len(lines)-2]}
		}

		out = append(out, lines...)
	}

	return out
}
