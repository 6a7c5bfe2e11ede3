package pve

import (
	"strings"
	"testing"
)

func TestNormalizeEndpoint(t *testing.T) {
	t.Parallel()
	same := "https://pve.example.com:8006/api2/json"
	for _, in := range []string{
		"https://pve.example.com:8006",
		"https://pve.example.com:8006/",
		"https://pve.example.com:8006/api2/json",
		"https://pve.example.com:8006/api2/json/",
		" HTTPS://PVE.example.com:8006// ",
		"pve.example.com:8006",
	} {
		got, err := NormalizeEndpoint(in)
		if err != nil {
			t.Fatalf("NormalizeEndpoint(%q): %v", in, err)
		}
		if got != same {
			t.Errorf("NormalizeEndpoint(%q) = %q, want %q", in, got, same)
		}
	}
	for in, want := range map[string]string{
		"https://proxy.example.com/pve/":   "https://proxy.example.com/pve/api2/json",
		"https://proxy.example.com:443":    "https://proxy.example.com/api2/json",
		"https://[::1]:8006/api2/json":     "https://[::1]:8006/api2/json",
		"https://127.0.0.1:8006/api2/json": "https://127.0.0.1:8006/api2/json",
		"http://127.0.0.1:8006":            "http://127.0.0.1:8006/api2/json",
		"http://localhost:8006":            "http://localhost:8006/api2/json",
		"http://[::1]:8006":                "http://[::1]:8006/api2/json",
	} {
		got, err := NormalizeEndpoint(in)
		if err != nil || got != want {
			t.Errorf("NormalizeEndpoint(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"http://pve.example.com:8006", "http://10.0.0.5:8006", "http://[fd00::1]:8006"} {
		_, err := NormalizeEndpoint(in)
		if err == nil || !strings.Contains(err.Error(), "plain http") || !strings.Contains(err.Error(), "https://") {
			t.Errorf("NormalizeEndpoint(%q): %v, want a refusal of plain http", in, err)
		}
	}
	for _, bad := range []string{"", "ftp://pve:8006", "https://", "https://user:pw@pve:8006", "https://pve:8006/?x=1"} {
		if _, err := NormalizeEndpoint(bad); err == nil {
			t.Errorf("NormalizeEndpoint(%q) succeeded, want an error", bad)
		}
	}
}

func TestParseAPIToken(t *testing.T) {
	t.Parallel()
	tok, err := ParseAPIToken("root@pam!pulumi=0b5c1f2e-1111-2222-3333-444455556666")
	if err != nil {
		t.Fatal(err)
	}
	if tok.ID != "root@pam!pulumi" || tok.Secret != "0b5c1f2e-1111-2222-3333-444455556666" {
		t.Fatalf("parsed %+v", tok)
	}
	if tok2, err := ParseAPIToken("PVEAPIToken=root@pam!pulumi=abc"); err != nil || tok2.ID != "root@pam!pulumi" {
		t.Fatalf("with header prefix: %+v %v", tok2, err)
	}
	const secret = "s3cr3t-value"
	for _, bad := range []string{"", "root@pam!pulumi", "root@pam!pulumi=", "root@pam=" + secret, "root!tok=" + secret, "root@pam!tok=" + secret + " x"} {
		_, err := ParseAPIToken(bad)
		if err == nil {
			t.Errorf("ParseAPIToken(%q) succeeded, want an error", bad)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error for %q leaks the secret: %v", bad, err)
		}
	}
}
