package talos

import (
	"slices"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestSchematicIDKnownValues(t *testing.T) {
	t.Parallel()

	// Known IDs from the Image Factory (see ../shared/pitfalls.md).
	if got, want := SchematicID(nil), "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"; got != want {
		t.Errorf("empty schematic ID = %s, want %s", got, want)
	}

	if got, want := SchematicID([]string{QemuGuestAgent}), "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"; got != want {
		t.Errorf("qemu-guest-agent schematic ID = %s, want %s", got, want)
	}

	if SchematicID([]string{"siderolabs/iscsi-tools", QemuGuestAgent}) == SchematicID([]string{QemuGuestAgent, "siderolabs/iscsi-tools"}) {
		t.Error("extension order must change the schematic ID, as in the Image Factory")
	}
}

func TestSchematicYAMLMatchesYAMLv3(t *testing.T) {
	t.Parallel()

	sets := [][]string{nil, {QemuGuestAgent}, {"siderolabs/zfs", "siderolabs/amd-ucode"}}
	for _, e := range OfficialExtensions {
		sets = append(sets, []string{e, QemuGuestAgent})
	}

	for _, set := range sets {
		want, err := yaml.Marshal(schematic{Customization: customization{SystemExtensions: systemExtensions{OfficialExtensions: set}}})
		if err != nil {
			t.Fatal(err)
		}

		if got := schematicYAML(set); string(got) != string(want) {
			t.Errorf("schematicYAML(%v) = %q, yaml.v3 gives %q", set, got, want)
		}
	}
}

func TestCatalogLookup(t *testing.T) {
	t.Parallel()

	c := NewCatalog()

	ext, ok := c.Lookup("ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515")
	if !ok || len(ext) != 1 || ext[0] != QemuGuestAgent {
		t.Fatalf("Lookup(qemu-guest-agent ID) = %v, %v", ext, ok)
	}

	four := []string{"siderolabs/util-linux-tools", "siderolabs/qemu-guest-agent", "siderolabs/iscsi-tools", "siderolabs/intel-ucode"}
	if ext, ok := c.Lookup(SchematicID(four)); !ok || !slices.Equal(ext, four) {
		t.Errorf("Lookup(unsorted set of 4) = %v, %v", ext, ok)
	}

	five := append(slices.Clone(four), "siderolabs/zfs")
	if _, ok := c.Lookup(SchematicID(five)); ok {
		t.Error("a set of 5 extensions must not be precomputed")
	}

	id := c.Register(five...)
	if ext, ok := c.Lookup(id); !ok || len(ext) != 5 {
		t.Errorf("Lookup(registered) = %v, %v", ext, ok)
	}

	if _, ok := c.Lookup("0000000000000000000000000000000000000000000000000000000000000000"); ok {
		t.Error("unknown ID must not be found")
	}
}

func TestParseBootURL(t *testing.T) {
	t.Parallel()

	const id = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"

	tests := []struct {
		url     string
		want    Image
		wantErr bool
		wantISO bool
	}{
		{url: "https://factory.talos.dev/image/" + id + "/v1.12.5/nocloud-amd64.iso", want: Image{Version: "v1.12.5", Schematic: id, Platform: "nocloud"}, wantISO: true},
		{url: "https://mirror.example.com/talos/image/" + id + "/v1.11.3/nocloud-amd64.raw.xz", want: Image{Version: "v1.11.3", Schematic: id, Platform: "nocloud"}},
		{url: "https://factory.talos.dev/image/" + id + "/v1.12.5/metal-amd64.qcow2", want: Image{Version: "v1.12.5", Schematic: id, Platform: "metal"}},
		{url: "https://github.com/siderolabs/talos/releases/download/v1.12.5/metal-amd64.iso", want: Image{Version: "v1.12.5", Platform: "metal"}, wantISO: true},
		{url: "https://factory.talos.dev/image/" + id + "/v1.12.5/nocloud-arm64.iso", wantErr: true},
		{url: "https://factory.talos.dev/image/nothex/v1.12.5/nocloud-amd64.iso", wantErr: true},
		{url: "https://factory.talos.dev/image/" + id + "/latest/nocloud-amd64.iso", wantErr: true},
		{url: "https://releases.ubuntu.com/24.04/ubuntu-24.04-live-server-amd64.iso", wantErr: true},
		{url: "local:iso/talos.iso", wantErr: true},
	}

	for _, tt := range tests {
		got, err := ParseBootURL(tt.url)
		if tt.wantErr {
			if err == nil {
				t.Errorf("ParseBootURL(%q) = %v, want an error", tt.url, got)
			}

			continue
		}

		if err != nil {
			t.Errorf("ParseBootURL(%q): %v", tt.url, err)

			continue
		}

		tt.want.Source = tt.url
		if got != tt.want {
			t.Errorf("ParseBootURL(%q) = %+v, want %+v", tt.url, got, tt.want)
		}

		if IsISO(tt.url) != tt.wantISO {
			t.Errorf("IsISO(%q) = %v", tt.url, !tt.wantISO)
		}
	}
}

func TestParseInstallerRef(t *testing.T) {
	t.Parallel()

	const id = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"

	tests := []struct {
		ref     string
		want    Image
		wantErr bool
	}{
		{ref: "factory.talos.dev/nocloud-installer/" + id + ":v1.12.5", want: Image{Version: "v1.12.5", Schematic: id, Platform: "nocloud"}},
		{ref: "factory.talos.dev/installer/" + id + ":v1.12.4", want: Image{Version: "v1.12.4", Schematic: id, Platform: "metal"}},
		{ref: "registry.local:5000/factory/nocloud-installer-secureboot/" + id + ":v1.12.5", want: Image{Version: "v1.12.5", Schematic: id, Platform: "nocloud"}},
		{ref: "ghcr.io/siderolabs/installer:v1.12.5", want: Image{Version: "v1.12.5", Platform: "metal"}},
		{ref: "ghcr.io/siderolabs/installer", wantErr: true},
		{ref: "factory.talos.dev/nocloud-installer/" + id + ":latest", wantErr: true},
		{ref: "docker.io/library/nginx:1.27", wantErr: true},
		{ref: "factory.talos.dev/kernel/" + id + ":v1.12.5", wantErr: true},
	}

	for _, tt := range tests {
		got, err := ParseInstallerRef(tt.ref)
		if tt.wantErr {
			if err == nil {
				t.Errorf("ParseInstallerRef(%q) = %v, want an error", tt.ref, got)
			}

			continue
		}

		if err != nil {
			t.Errorf("ParseInstallerRef(%q): %v", tt.ref, err)

			continue
		}

		tt.want.Source = tt.ref
		if got != tt.want {
			t.Errorf("ParseInstallerRef(%q) = %+v, want %+v", tt.ref, got, tt.want)
		}
	}
}
