package talosconfig

import (
	"strings"
	"testing"
)

const (
	emptySchematicID = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"
	qemuAgentID      = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
)

// IDs the Image Factory assigns (pitfalls.md, and image-factory
// pkg/schematic/schematic_test.go for the kernel-args and meta cases).
func TestSchematicIDs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		s    Schematic
		want string
	}{
		{"empty", Schematic{}, emptySchematicID},
		{"qemu-guest-agent", Schematic{Extensions: []string{"siderolabs/qemu-guest-agent"}}, qemuAgentID},
		{"kernel args", Schematic{KernelArgs: []string{"noapic", "nolapic"}}, "9cba8e32753f91a16c1837ab8abf356af021706ef284aef07380780177d9a06c"},
		{"meta", Schematic{Meta: []MetaValue{{Key: 0x0a, Value: "foo"}}}, "d308a2a5ee2277bed5fbaa104fcbc8d59122abfa737df987a95b4ca763459a7f"},
	} {
		got, err := tc.s.ID()
		if err != nil || got != tc.want {
			t.Errorf("%s: ID = %s, %v; want %s", tc.name, got, err, tc.want)
		}
	}
	a, _ := Schematic{Extensions: []string{"siderolabs/qemu-guest-agent", "siderolabs/iscsi-tools"}}.ID()
	b, _ := Schematic{Extensions: []string{"siderolabs/iscsi-tools", "siderolabs/qemu-guest-agent"}}.ID()
	if a == b {
		t.Errorf("extension order does not change the ID, but the Image Factory hashes it in order")
	}
	y, _ := Schematic{Extensions: []string{"siderolabs/qemu-guest-agent"}}.YAML()
	if string(y) != "customization:\n    systemExtensions:\n        officialExtensions:\n            - siderolabs/qemu-guest-agent\n" {
		t.Errorf("schematic YAML = %q", y)
	}
}

func TestSchematicCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s    Schematic
		want string
	}{
		{Schematic{Extensions: []string{"qemu-guest-agent"}}, "siderolabs/qemu-guest-agent"},
		{Schematic{Extensions: []string{"siderolabs/qemu-guest-agent", "siderolabs/qemu-guest-agent"}}, "twice"},
		{Schematic{KernelArgs: []string{"a b"}}, "one non-empty word"},
	} {
		if _, err := tc.s.ID(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want containing %q", tc.s, err, tc.want)
		}
	}
}

func TestFactoryURLs(t *testing.T) {
	t.Parallel()
	got, err := FactoryURLs(qemuAgentID, "1.12.5", FactoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := FactoryImages{
		SchematicID: qemuAgentID,
		ISO:         "https://factory.talos.dev/image/" + qemuAgentID + "/v1.12.5/nocloud-amd64.iso",
		DiskRawXZ:   "https://factory.talos.dev/image/" + qemuAgentID + "/v1.12.5/nocloud-amd64.raw.xz",
		DiskQCOW2:   "https://factory.talos.dev/image/" + qemuAgentID + "/v1.12.5/nocloud-amd64.qcow2",
		Installer:   "factory.talos.dev/nocloud-installer/" + qemuAgentID + ":v1.12.5",
	}
	if got != want {
		t.Errorf("FactoryURLs =\n%+v\nwant\n%+v", got, want)
	}

	mirror, err := FactoryURLs(emptySchematicID, "v1.11.5", FactoryOptions{
		BaseURL: "https://mirror.lab/talos/", InstallerRegistry: "registry.lab:5000/factory", Platform: "metal", Arch: "arm64",
	})
	if err != nil {
		t.Fatal(err)
	}
	if mirror.ISO != "https://mirror.lab/talos/image/"+emptySchematicID+"/v1.11.5/metal-arm64.iso" ||
		mirror.Installer != "registry.lab:5000/factory/metal-installer/"+emptySchematicID+":v1.11.5" {
		t.Errorf("mirror URLs = %+v", mirror)
	}
	onlyBase, _ := FactoryURLs(emptySchematicID, "v1.12.5", FactoryOptions{BaseURL: "http://10.0.0.5:8080"})
	if onlyBase.Installer != "10.0.0.5:8080/nocloud-installer/"+emptySchematicID+":v1.12.5" {
		t.Errorf("installer registry defaults to the mirror host: %s", onlyBase.Installer)
	}

	for _, tc := range []struct {
		id, version string
		opts        FactoryOptions
		want        string
	}{
		{"abc", "v1.12.5", FactoryOptions{}, "64 lowercase hex"},
		{qemuAgentID, "latest", FactoryOptions{}, "talos version"},
		{qemuAgentID, "v1.12.5", FactoryOptions{BaseURL: "factory.talos.dev"}, "http(s) base URL"},
		{qemuAgentID, "v1.12.5", FactoryOptions{InstallerRegistry: "https://registry.lab"}, "without a scheme"},
		{qemuAgentID, "v1.12.5", FactoryOptions{Arch: "x86_64"}, "amd64 or arm64"},
		{qemuAgentID, "v1.12.5", FactoryOptions{Platform: "No Cloud"}, "platform"},
	} {
		if _, err := FactoryURLs(tc.id, tc.version, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("FactoryURLs(%q, %q, %+v) error %v, want containing %q", tc.id, tc.version, tc.opts, err, tc.want)
		}
	}
}

func TestParseFactoryURL(t *testing.T) {
	t.Parallel()
	urls, _ := FactoryURLs(qemuAgentID, "v1.12.5", FactoryOptions{})
	for ref, want := range map[string]FactoryImage{
		urls.ISO:       {Base: "https://factory.talos.dev", SchematicID: qemuAgentID, TalosVersion: "v1.12.5", Platform: "nocloud", Arch: "amd64", Kind: "iso"},
		urls.DiskRawXZ: {Base: "https://factory.talos.dev", SchematicID: qemuAgentID, TalosVersion: "v1.12.5", Platform: "nocloud", Arch: "amd64", Kind: "raw.xz"},
		urls.DiskQCOW2: {Base: "https://factory.talos.dev", SchematicID: qemuAgentID, TalosVersion: "v1.12.5", Platform: "nocloud", Arch: "amd64", Kind: "qcow2"},
		urls.Installer: {Base: "factory.talos.dev", SchematicID: qemuAgentID, TalosVersion: "v1.12.5", Platform: "nocloud", Kind: "installer"},
		"https://mirror.lab/talos/image/" + emptySchematicID + "/v1.11.0/digital-ocean-amd64-secureboot.raw.gz": {
			Base: "https://mirror.lab/talos", SchematicID: emptySchematicID, TalosVersion: "v1.11.0", Platform: "digital-ocean", Arch: "amd64", Kind: "raw.gz", SecureBoot: true},
		"factory.talos.dev/installer/" + emptySchematicID + ":v1.10.3": {
			Base: "factory.talos.dev", SchematicID: emptySchematicID, TalosVersion: "v1.10.3", Platform: "metal", Kind: "installer"},
		"registry.lab:5000/factory/metal-installer-secureboot/" + emptySchematicID + ":v1.12.0": {
			Base: "registry.lab:5000/factory", SchematicID: emptySchematicID, TalosVersion: "v1.12.0", Platform: "metal", Kind: "installer", SecureBoot: true},
	} {
		got, err := ParseFactoryURL(ref)
		if err != nil || got != want {
			t.Errorf("ParseFactoryURL(%s) = %+v, %v\nwant %+v", ref, got, err, want)
		}
	}
	for _, bad := range []string{
		"https://github.com/siderolabs/talos/releases/download/v1.12.5/metal-amd64.iso",
		"https://factory.talos.dev/image/" + qemuAgentID + "/v1.12.5/nocloud-amd64.exe",
		"https://factory.talos.dev/image/" + qemuAgentID + "/v1.12.5/nocloud-riscv.iso",
		"ghcr.io/siderolabs/installer:v1.12.5",
	} {
		if _, err := ParseFactoryURL(bad); err == nil {
			t.Errorf("ParseFactoryURL(%s) accepted it", bad)
		}
	}
}

func TestCheckPlatform(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"", "nocloud", "metal", "digital-ocean"} {
		if msg := CheckPlatform(ok); msg != "" {
			t.Errorf("%q: %s", ok, msg)
		}
	}
	if msg := CheckPlatform("no-cloud"); !strings.Contains(msg, `did you mean "nocloud"`) || !strings.Contains(msg, `use "nocloud" on Proxmox`) {
		t.Errorf("no-cloud: %s", msg)
	}
	if msg := CheckPlatform("proxmox"); !strings.Contains(msg, `"proxmox" is not a Talos platform`) || strings.Contains(msg, "did you mean") {
		t.Errorf("proxmox: %s", msg)
	}
}
