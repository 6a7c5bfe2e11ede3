package talosconfig

import (
	"crypto/x509"
	"encoding/pem"
	"reflect"
	"strings"
	"testing"
)

func TestNewSecretsFollowsContract(t *testing.T) {
	t.Parallel()
	b := testBundle(t, "v1.12.5")
	if err := b.Validate(); err != nil {
		t.Fatalf("bundle does not validate: %v", err)
	}
	if b.Secrets.SecretboxEncryptionSecret == "" || b.Secrets.AESCBCEncryptionSecret != "" {
		t.Errorf("a 1.12 bundle must use secretbox encryption only")
	}
	block, _ := pem.Decode(b.Certs.OS.Crt)
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !ca.NotBefore.Equal(testNow) || !ca.IsCA {
		t.Errorf("OS CA NotBefore = %s (CA %v), want %s", ca.NotBefore, ca.IsCA, testNow)
	}
	if _, err := NewSecrets("v1.6.0", testNow); err == nil {
		t.Errorf("NewSecrets accepted an unsupported Talos version")
	}
}

func TestSecretsRoundTrip(t *testing.T) {
	t.Parallel()
	b := testBundle(t, "v1.12.5")
	text, err := MarshalSecrets(b)
	if err != nil {
		t.Fatal(err)
	}
	// the talosctl gen secrets layout
	for _, key := range []string{"cluster:", "secrets:", "trustdinfo:", "certs:", "bootstraptoken:", "k8sserviceaccount:"} {
		if !strings.Contains(text, key) {
			t.Errorf("marshalled bundle lacks %q", key)
		}
	}
	back, err := UnmarshalSecrets(text)
	if err != nil {
		t.Fatal(err)
	}
	back.Clock = nil
	b2 := *b
	b2.Clock = nil
	if !reflect.DeepEqual(back, &b2) {
		t.Errorf("bundle changed in a marshal round trip")
	}
	again, _ := MarshalSecrets(back)
	if again != text {
		t.Errorf("marshalling is not stable")
	}
}

func TestUnmarshalSecretsErrorsDoNotQuoteInput(t *testing.T) {
	t.Parallel()
	const leak = "s3cr3t-value-XYZ"
	for name, tc := range map[string]struct{ in, want string }{
		"not yaml":      {in: "cluster: [" + leak, want: "not the YAML"},
		"unknown field": {in: "cluster:\n  id: a\n  secret: b\n  extra: " + leak + "\n", want: "line 4"},
		"wrong type":    {in: "cluster: " + leak + "\n", want: "not the YAML"},
		"incomplete":    {in: "cluster:\n  id: a\n  secret: " + leak + "\n", want: "incomplete"},
	} {
		_, err := UnmarshalSecrets(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error = %v, want containing %q", name, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), leak) {
			t.Errorf("%s: error quotes the input: %v", name, err)
		}
	}
}
