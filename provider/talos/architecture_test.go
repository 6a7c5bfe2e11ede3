package talos

import (
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

// architecture is an enum with default amd64: the default and arm64 reach the URLs, another
// value is refused, and state written with the plain string (or without it) diffs as before.
func TestImageFactoryArchitecture(t *testing.T) {
	t.Parallel()
	s := server(t, newClock(t0))
	invoke := func(arch string) (string, error) {
		args := map[string]property.Value{"talosVersion": str("v1.12.5")}
		if arch != "" {
			args["architecture"] = str(arch)
		}
		resp, err := s.Invoke(p.InvokeRequest{Token: factoryToken, Args: property.NewMap(args)})
		if err != nil {
			return "", err
		}
		return resp.Return.Get("isoUrl").AsString(), nil
	}
	for arch, want := range map[string]string{"": "/nocloud-amd64.iso", "amd64": "/nocloud-amd64.iso", "arm64": "/nocloud-arm64.iso"} {
		if iso, err := invoke(arch); err != nil || !strings.HasSuffix(iso, want) {
			t.Errorf("getImageFactory architecture %q: isoUrl %q, %v; want ...%s", arch, iso, err, want)
		}
	}
	if _, err := invoke("x86_64"); err == nil || !strings.Contains(err.Error(), "amd64 or arm64") {
		t.Errorf("getImageFactory architecture x86_64: %v, want a refusal naming amd64 or arm64", err)
	}

	f := labFactory(t)
	r := newRes(t, schematicServer(t), "ImageFactorySchematic", "arch")
	if err := r.create(schematicInputs(f.URL(), nil)); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(r.out("isoUrl"), "/nocloud-amd64.iso") || r.out("architecture") != "amd64" {
		t.Errorf("default architecture: isoUrl %q, architecture %q", r.out("isoUrl"), r.out("architecture"))
	}
	if _, d := r.diff(schematicInputs(f.URL(), map[string]property.Value{"architecture": str("amd64")})); d.HasChanges {
		t.Errorf("explicit amd64 against the default: %+v", d.DetailedDiff)
	}
	r.state = r.state.Delete("architecture") // state from before the default
	if _, d := r.diff(schematicInputs(f.URL(), nil)); d.HasChanges {
		t.Errorf("state without architecture against the default: %+v", d.DetailedDiff)
	}
	if _, d := r.diff(schematicInputs(f.URL(), map[string]property.Value{"architecture": str("arm64")})); d.DetailedDiff["architecture"].Kind != p.Update {
		t.Errorf("amd64 -> arm64: %+v, want an update", d.DetailedDiff)
	}
}
