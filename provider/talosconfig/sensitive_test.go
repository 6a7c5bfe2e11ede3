package talosconfig

import "testing"

func TestSecretName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"passphrase": true, "luksPassphrase": true, "apiToken": true, "identityToken": true, "TS_AUTHKEY": true,
		"privateKey": true, "presharedKey": true, "key": true, "auth": true, "X-Auth-Token": true,
		"aws_secret_access_key": true, "credentialProviderConfig": true, "content": true, "env": true,
		"keySize": false, "keys": false, "slot": false, "authorizationConfig": false, "endpoint": false,
		"rotate-server-certificates": false, "mountPath": false, "monkey": false, "HTTPProxy": false,
	} {
		if got := secretName(name); got != want {
			t.Errorf("secretName(%q) = %v, want %v (words %q)", name, got, want, splitWords(name))
		}
	}
}

func TestSensitiveText(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"https://user:pw@host/x":                     true,
		"https://ghp_tokenasuser@host/x":             true,
		"https://host/x?jointoken=abc":               true,
		"siderolink.api=https://omni/?jointoken=abc": true,
		"TS_AUTHKEY=abc":                             true,
		"-----BEGIN EC PRIVATE KEY-----\nMHc\n":      true,
		"https://host/manifest.yaml?ref=main":        false,
		"console=ttyS0":                              false,
		"factory.talos.dev/installer/abc:v1.12.5":    false,
		"-----BEGIN CERTIFICATE-----\nMIIB\n":        false,
	} {
		if got := sensitiveText(s); got != want {
			t.Errorf("sensitiveText(%q) = %v, want %v", s, got, want)
		}
	}
}
