package talosconfig

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
)

func TestAdminCertificate(t *testing.T) {
	t.Parallel()
	b := testBundle(t, "v1.12.5")
	cc, err := NewAdminCertificate(b, testNow, 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(cc.CertPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	caBlock, _ := pem.Decode(b.Certs.OS.Crt)
	ca, _ := x509.ParseCertificate(caBlock.Bytes)
	if err := cert.CheckSignatureFrom(ca); err != nil {
		t.Errorf("admin certificate is not signed by the bundle's OS CA: %v", err)
	}
	if got := cert.Subject.Organization; len(got) != 1 || got[0] != "os:admin" {
		t.Errorf("organization = %v, want [os:admin]", got)
	}
	if len(cert.ExtKeyUsage) != 1 || cert.ExtKeyUsage[0] != x509.ExtKeyUsageClientAuth {
		t.Errorf("ext key usage = %v, want client auth", cert.ExtKeyUsage)
	}
	if !cert.NotAfter.Equal(testNow.Add(48*time.Hour)) || !cert.NotBefore.Equal(testNow.Add(-clockSkew)) {
		t.Errorf("validity %s..%s, want %s..%s", cert.NotBefore, cert.NotAfter, testNow.Add(-clockSkew), testNow.Add(48*time.Hour))
	}
	if _, err := NewAdminCertificate(b, testNow, 0); err == nil {
		t.Errorf("zero lifetime accepted")
	}
}

func TestNeedsRenewal(t *testing.T) {
	t.Parallel()
	cc, err := NewAdminCertificate(testBundle(t, "v1.12.5"), testNow, 30*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	notAfter := testNow.Add(30 * 24 * time.Hour)
	window := 7 * 24 * time.Hour
	for _, tc := range []struct {
		name string
		now  time.Time
		want bool
	}{
		{"fresh", testNow, false},
		{"just outside the window", notAfter.Add(-window - time.Second), false},
		{"at the window", notAfter.Add(-window), true},
		{"inside the window", notAfter.Add(-time.Hour), true},
		{"expired", notAfter.Add(time.Hour), true},
	} {
		if got := NeedsRenewal(cc.CertPEM, tc.now, window); got != tc.want {
			t.Errorf("%s: NeedsRenewal = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !NeedsRenewal([]byte("not a certificate"), testNow, window) {
		t.Errorf("an unreadable certificate must be renewed")
	}
}

func TestClientConfiguration(t *testing.T) {
	t.Parallel()
	b := testBundle(t, "v1.12.5")
	cc, _ := NewAdminCertificate(b, testNow, time.Hour)
	text, err := ClientConfiguration("lab", []string{"10.0.0.11", "10.0.0.12"}, []string{"10.0.0.11"}, b.Certs.OS.Crt, cc)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientconfig.FromString(text)
	if err != nil {
		t.Fatalf("talosctl cannot read the talosconfig: %v", err)
	}
	ctx := cfg.Contexts[cfg.Context]
	if cfg.Context != "lab" || ctx == nil {
		t.Fatalf("context = %q", cfg.Context)
	}
	if strings.Join(ctx.Endpoints, ",") != "10.0.0.11,10.0.0.12" || strings.Join(ctx.Nodes, ",") != "10.0.0.11" {
		t.Errorf("endpoints %v nodes %v", ctx.Endpoints, ctx.Nodes)
	}
	ca, _ := base64.StdEncoding.DecodeString(ctx.CA)
	key, _ := base64.StdEncoding.DecodeString(ctx.Key)
	if string(ca) != string(b.Certs.OS.Crt) || string(key) != string(cc.KeyPEM) {
		t.Errorf("CA or key not carried into the talosconfig")
	}
	if _, err := ClientConfiguration("lab", nil, nil, b.Certs.OS.Crt, cc); err == nil || !strings.Contains(err.Error(), "endpoint") {
		t.Errorf("no endpoints: error = %v", err)
	}
}
