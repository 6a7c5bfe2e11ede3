package talosconfig

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"
	"go.yaml.in/yaml/v4"
)

// NewSecrets generates a secrets bundle (CAs, keys, tokens) for nodes that run
// talosVersion. now fixes the CAs' NotBefore; they are valid for ten years
// (secrets.CAValidityTime). The contract decides key kinds: secretbox rather
// than AES-CBC encryption after 1.2, an RSA service account key after 1.6.
func NewSecrets(talosVersion string, now time.Time) (*secrets.Bundle, error) {
	contract, err := VersionContract(talosVersion)
	if err != nil {
		return nil, err
	}
	bundle, err := secrets.NewBundle(secrets.NewFixedClock(now), contract)
	if err != nil {
		return nil, fmt.Errorf("generating the secrets bundle: %w", err)
	}
	return bundle, nil
}

// MarshalSecrets writes a bundle in the YAML form of `talosctl gen secrets`,
// so a bundle moves between this provider and talosctl unchanged. The output
// holds private keys: keep it secret.
func MarshalSecrets(bundle *secrets.Bundle) (string, error) {
	if bundle == nil {
		return "", fmt.Errorf("secrets bundle is missing")
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(bundle); err != nil {
		return "", fmt.Errorf("encoding the secrets bundle: %w", err)
	}
	if err := enc.Close(); err != nil {
		return "", fmt.Errorf("encoding the secrets bundle: %w", err)
	}
	return buf.String(), nil
}

// UnmarshalSecrets reads a bundle written by MarshalSecrets or by
// `talosctl gen secrets` and checks that it is complete. Errors never quote
// the input.
func UnmarshalSecrets(secretsYAML string) (*secrets.Bundle, error) {
	var bundle secrets.Bundle
	dec := yaml.NewDecoder(bytes.NewReader([]byte(secretsYAML)))
	dec.KnownFields(true)
	if err := dec.Decode(&bundle); err != nil {
		return nil, fmt.Errorf("secrets bundle is not the YAML of `talosctl gen secrets` (%s)", yamlErrorWithoutValues(err))
	}
	if err := bundle.Validate(); err != nil {
		return nil, fmt.Errorf("secrets bundle is incomplete: %w", err)
	}
	// The clock only dates certificates issued through the bundle's own
	// helpers; this package passes explicit times instead.
	bundle.Clock = secrets.NewClock()
	return &bundle, nil
}

// yamlErrorWithoutValues keeps the line numbers of a YAML decoding error but
// not its text, which can quote the input (key material).
func yamlErrorWithoutValues(err error) string {
	lines := lineRef.FindAllString(err.Error(), 3)
	if len(lines) == 0 {
		return "malformed YAML"
	}
	return "malformed YAML or an unknown field near " + strings.Join(lines, ", ")
}

var lineRef = regexp.MustCompile(`line \d+`)
