package talosconfig

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"

	"github.com/proxmoxtalos/proxmoxtalos/provider/memo"
)

// Entry is one leaf of a redacted configuration.
type Entry struct {
	// Path locates the leaf: "machine.kubelet.extraArgs.rotate-server-certificates"
	// in the v1alpha1 document, "Layer2VIPConfig/192.168.1.220: link" in others.
	Path string
	// Value is the leaf as text. Secret values read "(sensitive)" or
	// "(sensitive, hmac:<12 hex>)"; long or multi-line values are shortened
	// to "(<n> bytes, sha256:<12 hex>)"; empty maps and lists read {} and [].
	Value string
}

// View is a configuration with its secrets replaced, flattened to leaves in
// a stable order (documents as in the configuration, keys sorted).
type View []Entry

// Map returns the view as path → value.
func (v View) Map() map[string]string {
	m := make(map[string]string, len(v))
	for _, e := range v {
		m[e.Path] = e.Value
	}
	return m
}

// longValue is the length above which a non-secret value is shown by size
// and digest rather than in full (certificates, manifests).
const longValue = 160

// Redact returns the reviewer-friendly view of a machine configuration:
// every leaf with its path, secrets replaced. A secret's fingerprint is an
// HMAC keyed by the configuration's own cluster secret, so a reviewer sees
// that a secret changed while nobody can test guesses of a weak password
// against it.
func Redact(configYAML string) (View, error) { return RedactWith(configYAML, nil) }

// RedactWith is Redact that also hides every leaf that is one of the
// extra texts or contains one of at least 6 characters (values that came
// from a user's secret, wherever in the configuration they ended up).
func RedactWith(configYAML string, extra []string) (View, error) {
	// A preview redacts a configuration in Check and again in Diff: the
	// view depends on the text and the extra values alone (memo).
	r := views.Do(memo.KeyOf(append([]string{configYAML}, extra...)...), func() redaction {
		v, err := redactWith(configYAML, extra)
		return redaction{view: v, err: err}
	})
	return slices.Clone(r.view), r.err
}

type redaction struct {
	view View
	err  error
}

var views memo.Cache[redaction]

func redactWith(configYAML string, extra []string) (View, error) {
	docs, err := parseDocs(configYAML)
	if err != nil {
		return nil, err
	}
	machinerySecrets, err := machineryRedactedPaths(configYAML)
	if err != nil {
		return nil, err
	}
	key := fingerprintKey(docs)
	var view View
	for _, d := range docs {
		walkLeaves(d.body, nil, func(parts []any, v any) {
			if d.id != "" && len(parts) == 1 && (parts[0] == "kind" || parts[0] == "name") {
				return // already in the document id
			}
			path := joinPath(d.id, parts)
			var shown string
			if isSecretLeaf(machinerySecrets, d.id, parts, v) || holdsExtra(v, extra) {
				shown = sensitiveValue(key, v)
			} else {
				shown = displayValue(v)
			}
			view = append(view, Entry{Path: path, Value: shown})
		})
	}
	return view, nil
}

// SensitiveValues returns every secret leaf value of a configuration, for
// scrubbing text (errors, logs) that might quote one.
func SensitiveValues(configYAML string) []string {
	docs, err := parseDocs(configYAML)
	if err != nil {
		return nil
	}
	machinerySecrets, _ := machineryRedactedPaths(configYAML) //nolint:errcheck // rules below still apply
	var out []string
	for _, d := range docs {
		walkLeaves(d.body, nil, func(parts []any, v any) {
			if s, ok := v.(string); ok && s != "" && isSecretLeaf(machinerySecrets, d.id, parts, v) {
				out = append(out, s)
			}
		})
	}
	return out
}

// machineryRedactedPaths asks machinery which leaves it treats as secrets
// (Provider.RedactSecrets), so a secret field added in a later machinery is
// redacted here without a rule of ours.
func machineryRedactedPaths(configYAML string) (map[string]bool, error) {
	const marker = "proxmoxtalos-redacted-marker"
	markerB64 := base64.StdEncoding.EncodeToString([]byte(marker))
	cfg, err := configloader.NewFromBytes([]byte(configYAML))
	if err != nil {
		return nil, fmt.Errorf("machine configuration does not parse: %s", scrubDecodeError(err))
	}
	redacted, err := cfg.RedactSecrets(marker).EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))
	if err != nil {
		return nil, fmt.Errorf("encoding the redacted configuration: %w", err)
	}
	docs, err := parseDocs(string(redacted))
	if err != nil {
		return nil, err
	}
	paths := map[string]bool{}
	for _, d := range docs {
		walkLeaves(d.body, nil, func(parts []any, v any) {
			if s, ok := v.(string); ok && (s == marker || s == markerB64) {
				paths[joinPath(d.id, parts)] = true
			}
		})
	}
	return paths, nil
}

func sensitiveValue(key []byte, v any) string {
	if key == nil || v == nil {
		return "(sensitive)"
	}
	mac := hmac.New(sha256.New, key)
	_, _ = fmt.Fprint(mac, v) // a hash.Hash's Write never fails
	return "(sensitive, hmac:" + hex.EncodeToString(mac.Sum(nil))[:12] + ")"
}

// fingerprintKey derives the HMAC key from cluster.secret; without one,
// secrets are shown without a fingerprint.
func fingerprintKey(docs []doc) []byte {
	for _, d := range docs {
		if d.id != "" {
			continue
		}
		cluster, _ := d.body.(map[string]any)["cluster"].(map[string]any)
		secret, _ := cluster["secret"].(string)
		if secret == "" {
			return nil
		}
		sum := sha256.Sum256([]byte("proxmoxtalos config fingerprint\x00" + secret))
		return sum[:]
	}
	return nil
}

func displayValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "{}"
	case []any:
		return "[]"
	case string:
		if x == "" {
			return `""`
		}
		if len(x) > longValue || strings.Contains(x, "\n") {
			sum := sha256.Sum256([]byte(x))
			return fmt.Sprintf("(%d bytes, sha256:%s)", len(x), hex.EncodeToString(sum[:])[:12])
		}
		return x
	default:
		return fmt.Sprint(x)
	}
}

// holdsExtra: the leaf is one of the extra secret texts or contains one
// long enough not to match ordinary words.
func holdsExtra(v any, extra []string) bool {
	if v == nil || len(extra) == 0 {
		return false
	}
	s := fmt.Sprint(v)
	for _, e := range extra {
		if e != "" && (s == e || len(e) >= 6 && strings.Contains(s, e)) {
			return true
		}
	}
	return false
}
