package talosconfig

import (
	"net/url"
	"strings"
	"unicode"
)

// The rules below are safe by default: a leaf is secret when any key on its
// path names a secret, so a field added in a later machinery (or a key in an
// unstructured section such as kubelet extraConfig) is hidden without a new
// rule. Over-hiding costs a reviewer one value; under-hiding leaks a secret
// into state and previews. Secret-bearing fields in machinery v1.12.5 that
// these rules are checked against (TestRedactHidesEverySecret):
//   - encryption keys' static.passphrase: machine.systemDiskEncryption.*,
//     VolumeConfig and UserVolumeConfig encryption (config/types/block/encryption.go)
//   - registry auth (password, auth, identityToken) in machine.registries and
//     RegistryAuthConfig (config/types/cri/registry_auth.go)
//   - apiToken of the HCloud/Equinix VIP (v1alpha1 and network/hcloud_vip.go)
//   - SideroLinkConfig apiUrl (join token in the query) and uniqueToken
//   - ExtensionServiceConfig environment and configFiles[].content
//   - machine.env (proxy URLs), machine.files[].content, inline manifests,
//     extraManifestHeaders, WireGuard privateKey/presharedKey
//   - machinery's own list (Config.RedactSecrets) is applied besides these.

// secretSubstrings mark a key (lower case, separators removed) as secret
// wherever they occur in it: "luksPassphrase", "TS_AUTHKEY", "apiToken".
var secretSubstrings = []string{
	"passphrase", "password", "passwd", "secret", "token", "credential",
	"privatekey", "presharedkey", "apikey", "authkey", "accesskey", "signingkey",
}

// secretWords mark a key as secret when they are one whole word of it
// (camelCase, '-', '_', '.' and '/' split words), because as substrings they
// would hide ordinary fields ("monkey", "authorizationConfig").
var secretWords = map[string]bool{
	"auth": true, "pass": true, "pwd": true, "pin": true,
	// Free text that may hold anything: file contents, manifests, environments.
	"content": true, "contents": true, "env": true, "environment": true,
}

// isSecretLeaf decides for Redact and SensitiveValues alike whether a leaf
// is secret: machinery says so (machineryRedactedPaths), a key on its path
// names a secret, or its value holds one.
func isSecretLeaf(machinerySecrets map[string]bool, docID string, parts []any, v any) bool {
	return machinerySecrets[joinPath(docID, parts)] || isSensitive(docID, parts) || sensitiveText(v)
}

// isSensitive applies our rules to one leaf.
func isSensitive(docID string, parts []any) bool {
	kind, _, _ := strings.Cut(docID, "/")
	var keys []string
	for _, p := range parts {
		if s, ok := p.(string); ok {
			keys = append(keys, s)
			if secretName(s) {
				return true
			}
		}
	}
	has := func(prefix ...string) bool {
		if len(keys) < len(prefix) {
			return false
		}
		for i, p := range prefix {
			if keys[i] != p {
				return false
			}
		}
		return true
	}
	switch {
	case docID == "" && has("cluster", "extraManifestHeaders"): // Authorization and other auth headers
		return true
	case kind == "SideroLinkConfig" && has("apiUrl"): // the join token is in the URL
		return true
	}
	return false
}

// secretName reports whether a key names a secret.
func secretName(name string) bool {
	words := splitWords(name)
	if len(words) > 0 && words[len(words)-1] == "key" {
		return true // "key", "privateKey", "signing_key"; not "keySize", "keyUsage"
	}
	for _, w := range words {
		if secretWords[w] {
			return true
		}
	}
	joined := strings.Join(words, "")
	for _, s := range secretSubstrings {
		if strings.Contains(joined, s) {
			return true
		}
	}
	return false
}

// splitWords splits a key into lower-case words at separators and camelCase
// boundaries: "presharedKey" → [preshared key], "TS_AUTHKEY" → [ts authkey].
func splitWords(name string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	runes := []rune(name)
	for i, r := range runes {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
			continue
		case unicode.IsUpper(r) && len(cur) > 0:
			prevLower := unicode.IsLower(runes[i-1]) || unicode.IsDigit(runes[i-1])
			nextLower := i+1 < len(runes) && unicode.IsLower(runes[i+1])
			if prevLower || (unicode.IsUpper(runes[i-1]) && nextLower) {
				flush() // "apiToken" → api|Token, "HTTPProxy" → HTTP|Proxy
			}
		}
		cur = append(cur, r)
	}
	flush()
	return words
}

// sensitiveText catches secrets in a value wherever it sits: credentials in
// a URL (https://user:password@host/, ?jointoken=…), a PEM private key, and
// NAME=value settings (environment lists, kernel arguments) whose name or
// value is secret.
func sensitiveText(v any) bool {
	s, ok := v.(string)
	if !ok || s == "" {
		return false
	}
	if strings.Contains(s, "PRIVATE KEY-----") {
		return true
	}
	for _, field := range strings.Fields(s) {
		if urlHasSecret(field) {
			return true
		}
		if name, value, ok := strings.Cut(field, "="); ok && name != "" && !strings.ContainsAny(name, ":/?") {
			if secretName(name) || urlHasSecret(value) {
				return true
			}
		}
	}
	return false
}

// urlHasSecret reports a URL with user information (user:password@, or a
// token as the user) or a query parameter that names a secret.
func urlHasSecret(s string) bool {
	if !strings.Contains(s, "://") {
		return false
	}
	u, err := url.Parse(s)
	if err != nil {
		return false
	}
	if u.User != nil && u.User.String() != "" {
		return true // a password, or a token written as the user name
	}
	for name := range u.Query() {
		if secretName(name) {
			return true
		}
	}
	return false
}
