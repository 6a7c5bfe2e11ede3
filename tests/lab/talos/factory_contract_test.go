package talos

import (
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// The provider builds Image Factory URLs (provider/talosconfig); the lab
// parses them independently. Both must agree on what an URL names.
func TestProviderFactoryURLsBootInTheLab(t *testing.T) {
	t.Parallel()

	exts := []string{"siderolabs/iscsi-tools", QemuGuestAgent}

	id, err := talosconfig.Schematic{Extensions: exts}.ID()
	if err != nil {
		t.Fatal(err)
	}

	if id != SchematicID(exts) {
		t.Fatalf("provider schematic ID %s, lab %s", id, SchematicID(exts))
	}

	if got, ok := NewCatalog().Lookup(id); !ok || len(got) != 2 || got[0] != exts[0] {
		t.Fatalf("catalog lookup = %v, %v", got, ok)
	}

	urls, err := talosconfig.FactoryURLs(id, "v1.12.5", talosconfig.FactoryOptions{})
	if err != nil {
		t.Fatal(err)
	}

	want := Image{Version: "v1.12.5", Schematic: id, Platform: PlatformNocloud}

	for _, u := range []string{urls.ISO, urls.DiskRawXZ, urls.DiskQCOW2} {
		img, err := ParseBootURL(u)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}

		img.Source = ""
		if img != want {
			t.Errorf("%s -> %+v, want %+v", u, img, want)
		}
	}

	img, err := ParseInstallerRef(urls.Installer)
	if err != nil {
		t.Fatal(err)
	}

	img.Source = ""
	if img != want {
		t.Errorf("%s -> %+v, want %+v", urls.Installer, img, want)
	}

	mirror, err := talosconfig.FactoryURLs(id, "v1.12.5", talosconfig.FactoryOptions{BaseURL: "https://mirror.example.com/factory", InstallerRegistry: "registry.example.com:5000/factory"})
	if err != nil {
		t.Fatal(err)
	}

	if _, err := ParseBootURL(mirror.ISO); err != nil {
		t.Errorf("mirror ISO: %v", err)
	}

	if _, err := ParseInstallerRef(mirror.Installer); err != nil {
		t.Errorf("mirror installer: %v", err)
	}
}
