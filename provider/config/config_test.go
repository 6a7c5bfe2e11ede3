package config

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func ptr[T any](v T) *T { return &v }

func TestResolveFallsBackToEnvironment(t *testing.T) {
	t.Parallel()
	s, err := (&Config{}).Resolve(env(map[string]string{
		EnvEndpoint: "https://pve:8006", EnvAPIToken: "root@pam!t=abc", EnvInsecure: "true",
		EnvCACert: "PEM", EnvRequestTimeout: "15", EnvVMWatchScale: " 0.1",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if s.Endpoint != "https://pve:8006" || s.APIToken != "root@pam!t=abc" || !s.Insecure || s.CACert != "PEM" ||
		s.RequestTimeout != 15*time.Second || s.VMWatchScale != 0.1 {
		t.Fatalf("settings %+v", s)
	}
	// explicit configuration wins over the environment
	s, err = (&Config{Endpoint: "https://other:8006", Insecure: ptr(false), RequestTimeout: ptr(5)}).Resolve(env(map[string]string{
		EnvEndpoint: "https://pve:8006", EnvAPIToken: "root@pam!t=abc", EnvInsecure: "true",
	}))
	if err != nil || s.Endpoint != "https://other:8006" || s.Insecure || s.RequestTimeout != 5*time.Second {
		t.Fatalf("settings %+v, %v", s, err)
	}
	if s, _ := (&Config{APIToken: "root@pam!t=abc", Endpoint: "https://pve"}).Resolve(env(nil)); s.Insecure ||
		s.RequestTimeout != 60*time.Second || s.VMWatchScale != 1 {
		t.Fatalf("defaults: %+v (TLS must be verified by default)", s)
	}
}

func TestResolveErrors(t *testing.T) {
	t.Parallel()
	const secret = "TOPSECRET"
	for name, c := range map[string]struct {
		cfg  Config
		env  map[string]string
		want string
	}{
		"no token":       {Config{Endpoint: "https://pve:8006"}, nil, "apiToken"},
		"no endpoint":    {Config{APIToken: "root@pam!t=" + secret}, nil, "endpoint"},
		"bad token":      {Config{Endpoint: "https://pve:8006", APIToken: "root@pam=" + secret}, nil, "USER@REALM!TOKENID=SECRET"},
		"bad endpoint":   {Config{Endpoint: "ftp://pve", APIToken: "root@pam!t=" + secret}, nil, "https"},
		"bad insecure":   {Config{Endpoint: "https://pve", APIToken: "root@pam!t=" + secret}, map[string]string{EnvInsecure: "maybe"}, EnvInsecure},
		"zero timeout":   {Config{Endpoint: "https://pve", APIToken: "root@pam!t=" + secret, RequestTimeout: ptr(0)}, nil, "requestTimeout"},
		"nothing at all": {Config{}, nil, "not configured"},
		"zero scale":     {Config{Endpoint: "https://pve", APIToken: "root@pam!t=" + secret}, map[string]string{EnvVMWatchScale: "0"}, EnvVMWatchScale + `="0" is not a number from 0.01 to 10`},
		"text scale":     {Config{Endpoint: "https://pve", APIToken: "root@pam!t=" + secret}, map[string]string{EnvVMWatchScale: "fast"}, EnvVMWatchScale},
		"NaN scale":      {Config{Endpoint: "https://pve", APIToken: "root@pam!t=" + secret}, map[string]string{EnvVMWatchScale: "NaN"}, EnvVMWatchScale},
		"seconds scale":  {Config{Endpoint: "https://pve", APIToken: "root@pam!t=" + secret}, map[string]string{EnvVMWatchScale: "120"}, "from 0.01 to 10"},
		"tiny scale":     {Config{Endpoint: "https://pve", APIToken: "root@pam!t=" + secret}, map[string]string{EnvVMWatchScale: "0.001"}, "from 0.01 to 10"},
	} {
		_, err := c.cfg.Resolve(env(c.env))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error mentioning %q", name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("%s: error leaks the token secret: %v", name, err)
		}
	}
}

func TestConfigureWithoutProxmoxSettingsSucceeds(t *testing.T) {
	t.Setenv(EnvEndpoint, "")
	t.Setenv(EnvAPIToken, "")
	c := &Config{}
	if err := c.Configure(context.Background()); err != nil {
		t.Fatalf("a program using only Talos resources must configure: %v", err)
	}
	if c.client != nil {
		t.Fatal("client set without settings")
	}
}

func TestConfigureFailsForAnUnreachableEndpoint(t *testing.T) {
	t.Setenv(EnvEndpoint, "")
	t.Setenv(EnvAPIToken, "")
	c := &Config{Endpoint: "https://127.0.0.1:1", APIToken: "root@pam!t=abc", RequestTimeout: ptr(2)}
	err := c.Configure(context.Background())
	if err == nil || !strings.Contains(err.Error(), "cannot reach") {
		t.Fatalf("got %v", err)
	}
	if errors.Is(err, errNotConfigured) {
		t.Fatal("misreported as not configured")
	}
}

func m(kv map[string]property.Value) property.Map { return property.NewMap(kv) }

func TestDiffConfig(t *testing.T) {
	t.Parallel()
	base := map[string]property.Value{
		"endpoint": property.New("https://pve.example.com:8006"),
		"apiToken": property.New("root@pam!pulumi=old").WithSecret(true),
		"insecure": property.New(false),
	}
	with := func(k string, v property.Value) property.Map {
		n := map[string]property.Value{}
		for kk, vv := range base {
			n[kk] = vv
		}
		if v.IsNull() {
			delete(n, k)
		} else {
			n[k] = v
		}
		return m(n)
	}
	cases := []struct {
		name    string
		news    property.Map
		changes []string
	}{
		{"token rotated", with("apiToken", property.New("root@pam!pulumi=new").WithSecret(true)), nil},
		{"endpoint with /api2/json/", with("endpoint", property.New("https://pve.example.com:8006/api2/json/")), nil},
		{"insecure as a CLI string", with("insecure", property.New("false")), nil},
		{"insecure removed (defaults to false)", with("insecure", property.Value{}), nil},
		{"another host", with("endpoint", property.New("https://pve2.example.com:8006")), []string{"endpoint"}},
		{"insecure turned on", with("insecure", property.New(true)), []string{"insecure"}},
		{"CA added", with("caCert", property.New("-----BEGIN CERTIFICATE-----")), []string{"caCert"}},
		{"endpoint unknown", with("endpoint", property.New(property.Computed)), []string{"endpoint"}},
		{"full preview outputs turned on", with("fullPreviewOutputs", property.New(true)), nil},
	}
	for _, c := range cases {
		resp, err := Diff.Diff(context.Background(), p.DiffRequest{OldInputs: m(base), State: m(base), Inputs: c.news})
		if err != nil {
			t.Fatal(err)
		}
		if resp.HasChanges != (len(c.changes) > 0) || len(resp.DetailedDiff) != len(c.changes) {
			t.Errorf("%s: HasChanges=%v detailed=%v, want changes %v", c.name, resp.HasChanges, resp.DetailedDiff, c.changes)
		}
		for _, k := range c.changes {
			d, ok := resp.DetailedDiff[k]
			if !ok {
				t.Errorf("%s: no detailed diff for %s", c.name, k)
			}
			switch d.Kind {
			case p.AddReplace, p.UpdateReplace, p.DeleteReplace:
				t.Errorf("%s: %s would replace the provider", c.name, k)
			}
		}
		if resp.DeleteBeforeReplace {
			t.Errorf("%s: DeleteBeforeReplace set", c.name)
		}
	}
}

func TestResolveOfflinePreview(t *testing.T) {
	t.Parallel()
	// nothing is contacted, so nothing else need be set
	s, err := (&Config{}).Resolve(env(map[string]string{EnvOfflinePreview: "true"}))
	if err != nil || !s.OfflinePreview {
		t.Fatalf("offline from the environment: %+v, %v", s, err)
	}
	// the configuration wins over the environment
	if s, err := (&Config{OfflinePreview: ptr(false), Endpoint: "https://pve", APIToken: "root@pam!t=x"}).Resolve(
		env(map[string]string{EnvOfflinePreview: "true"})); err != nil || s.OfflinePreview {
		t.Fatalf("offlinePreview: false in the configuration: %+v, %v", s, err)
	}
	if _, err := (&Config{}).Resolve(env(map[string]string{EnvOfflinePreview: "yes please"})); err == nil ||
		!strings.Contains(err.Error(), EnvOfflinePreview) {
		t.Fatalf("a bad %s: %v", EnvOfflinePreview, err)
	}
}

func TestResolveFullPreviewOutputs(t *testing.T) {
	t.Parallel()
	if s, err := (&Config{}).Resolve(env(nil)); err != errNotConfigured || s.FullPreviewOutputs {
		t.Fatalf("the default: %+v, %v", s, err)
	}
	if s, _ := (&Config{}).Resolve(env(map[string]string{EnvFullPreviewOutputs: "true"})); !s.FullPreviewOutputs {
		t.Fatalf("from the environment: %+v", s)
	}
	// the configuration wins over the environment
	if s, _ := (&Config{FullPreviewOutputs: ptr(false)}).Resolve(env(map[string]string{EnvFullPreviewOutputs: "true"})); s.FullPreviewOutputs {
		t.Fatalf("fullPreviewOutputs: false in the configuration: %+v", s)
	}
	if _, err := (&Config{}).Resolve(env(map[string]string{EnvFullPreviewOutputs: "all"})); err == nil ||
		!strings.Contains(err.Error(), EnvFullPreviewOutputs) {
		t.Fatalf("a bad %s: %v", EnvFullPreviewOutputs, err)
	}
}
