package factory

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/talos"
)

// IDs published in siderolabs/image-factory pkg/schematic/schematic_test.go
// (TestID, TestUnmarshalID): the lab must compute the same.
func TestSchematicIDsMatchTheFactory(t *testing.T) {
	t.Parallel()

	const empty = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"

	for _, tc := range []struct{ body, id string }{
		{`{}`, empty},
		{`customization: {}`, empty},
		{`customization: {"extraKernelArgs": []}`, empty},
		{`{"customization": {"extraKernelArgs": ["noapic", "nolapic"]}}`, "9cba8e32753f91a16c1837ab8abf356af021706ef284aef07380780177d9a06c"},
		{`{"customization": {"extraKernelArgs": ["noapic", "nolapic"], "systemExtensions": {}}}`, "9cba8e32753f91a16c1837ab8abf356af021706ef284aef07380780177d9a06c"},
		{`{"customization": {"meta": [{"key": 10, "value": "foo"}], "extraKernelArgs": [], "systemExtensions": {}}}`, "d308a2a5ee2277bed5fbaa104fcbc8d59122abfa737df987a95b4ca763459a7f"},
		{"customization:\n  meta:\n    - key: 0xa\n      value: foo\n", "d308a2a5ee2277bed5fbaa104fcbc8d59122abfa737df987a95b4ca763459a7f"},
		{`{"overlay": {"name": "rpi_generic", "image": "siderolabs/sbc-raspberrypi"}}`, "ee21ef4a5ef808a9b7484cc0dda0f25075021691c8c09a276591eedb638ea1f9"},
		{`{"overlay": {"name": "rpi_generic", "image": "siderolabs/sbc-raspberrypi"},"customization":{}}`, "ee21ef4a5ef808a9b7484cc0dda0f25075021691c8c09a276591eedb638ea1f9"},
		{`{"customization":{"secureboot": {"includeWellKnownCertificates": true}}}`, "fa8e05f142a851d3ee568eb0a8e5841eaf6b0ebc8df9a63df16ac5ed2c04f3e6"},
		{`{"customization":{"diskImage": {"sectorSize": 4096}}}`, "92833e9ddd9bb9e11b2464fa5525429f01866306d52ebd882ee08d7918f6d1ea"},
		{"customization:\n  systemExtensions:\n    officialExtensions: [siderolabs/qemu-guest-agent]\n", "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"},
	} {
		s, err := ParseSchematic([]byte(tc.body))
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}

		if id, _ := s.ID(); id != tc.id {
			t.Errorf("%s: ID %s, the factory's is %s", tc.body, id, tc.id)
		}
	}
}

// The provider computes IDs offline (provider/talosconfig) and must agree
// with the factory the lab serves, for every input it offers.
func TestProviderSchematicIDsAgree(t *testing.T) {
	t.Parallel()

	for _, in := range []talosconfig.Schematic{
		{},
		{Extensions: []string{"siderolabs/qemu-guest-agent", "siderolabs/iscsi-tools", "siderolabs/util-linux-tools"}},
		{KernelArgs: []string{"console=ttyS0", "net.ifnames=0"}, Extensions: []string{"siderolabs/zfs"}},
		{Meta: []talosconfig.MetaValue{{Key: 0x0a, Value: `{"externalIPs":[]}`}}, KernelArgs: []string{"talos.dashboard.disabled=1"}},
	} {
		body, err := in.YAML()
		if err != nil {
			t.Fatal(err)
		}

		want, _ := in.ID() //nolint:errcheck // YAML succeeded

		s, err := ParseSchematic(body)
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}

		if id, _ := s.ID(); id != want {
			t.Errorf("provider ID %s, factory ID %s for\n%s", want, id, body)
		}
	}
}

func TestParseRefusesWhatTheFactoryRefuses(t *testing.T) {
	t.Parallel()

	for body, want := range map[string]string{
		"customization:\n  extensions: [siderolabs/zfs]\n": "field extensions not found",
		"customization:\n  bootloader: auto\n":             "auto does not belong to BootloaderKind values",
		"customization:\n  meta:\n    - key: 256\n":        "cannot unmarshal",
	} {
		_, err := ParseSchematic([]byte(body))
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, errInvalid) {
			t.Errorf("%q: error %v, want one containing %q", body, err, want)
		}
	}

	s, err := ParseSchematic([]byte("owner: alice\n"))
	if err != nil {
		t.Fatal(err)
	}

	if err := s.Validate(); err == nil || err.Error() != "owner field is only supported in Enterprise edition" {
		t.Errorf("owner: %v", err)
	}

	s, err = ParseSchematic([]byte("customization:\n  bootloader: sd-boot\n"))
	if err != nil {
		t.Fatal(err)
	}

	if b, _ := s.Marshal(); !strings.Contains(string(b), "bootloader: sd-boot") {
		t.Errorf("sd-boot lost in the canonical form:\n%s", b)
	}
}

func start(t *testing.T) *Server {
	t.Helper()

	s, err := Start(Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { s.Close() })

	return s
}

func do(t *testing.T, method, url, body string) (int, string) {
	t.Helper()

	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}

	req.Header.Set("Content-Type", "application/yaml")

	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()

	b, _ := io.ReadAll(resp.Body) //nolint:errcheck // test

	return resp.StatusCode, string(b)
}

// A custom schematic is 404 at the factory until POST /schematics; then it
// is served, downloads of its images succeed, and the simulator's catalog
// knows its extensions.
func TestRegisterThenDownload(t *testing.T) {
	t.Parallel()

	s := start(t)
	body := "customization:\n  extraKernelArgs: [console=ttyS0]\n  systemExtensions:\n    officialExtensions:\n      - siderolabs/qemu-guest-agent\n      - siderolabs/nvme-cli\n"
	sch, _ := ParseSchematic([]byte(body)) //nolint:errcheck // checked below
	id, _ := sch.ID()                      //nolint:errcheck // test

	iso := "https://factory.talos.dev/image/" + id + "/v1.12.5/nocloud-amd64.iso"
	if err := s.Fetch(t.Context(), iso); err == nil || err.Error() != "404 Not Found" {
		t.Fatalf("download before registration: %v, want 404 Not Found", err)
	}

	if code, _ := do(t, "GET", s.URL()+"/schematics/"+id, ""); code != http.StatusNotFound {
		t.Fatalf("GET before registration: %d", code)
	}

	if _, ok := s.Catalog().Lookup(id); ok {
		t.Fatal("catalog knows the schematic before registration")
	}

	for range 2 { // registering again is fine and gives the same ID
		code, resp := do(t, "POST", s.URL()+"/schematics", body)
		if code != http.StatusCreated {
			t.Fatalf("POST: %d %s", code, resp)
		}

		var got struct{ ID, Schematic string }
		if err := json.Unmarshal([]byte(resp), &got); err != nil || got.ID != id {
			t.Fatalf("POST answered %s (%v), want id %s", resp, err, id)
		}

		if !strings.HasPrefix(got.Schematic, "customization:\n    extraKernelArgs:\n        - console=ttyS0\n") {
			t.Errorf("canonical schematic:\n%s", got.Schematic)
		}
	}

	if s.Registrations() != 2 {
		t.Errorf("registrations = %d", s.Registrations())
	}

	code, yaml := do(t, "GET", s.URL()+"/schematics/"+id, "")
	if code != http.StatusOK || !strings.Contains(yaml, "siderolabs/nvme-cli") {
		t.Fatalf("GET after registration: %d %s", code, yaml)
	}

	for _, u := range []string{iso, s.URL() + "/image/" + id + "/v1.12.5/nocloud-amd64.iso"} {
		if err := s.Fetch(t.Context(), u); err != nil {
			t.Errorf("download %s after registration: %v", u, err)
		}
	}

	if code, _ := do(t, "HEAD", s.URL()+"/image/"+id+"/1.12.5/metal-amd64.raw.xz", ""); code != http.StatusOK {
		t.Errorf("HEAD image: %d", code)
	}

	if exts, ok := s.Catalog().Lookup(id); !ok || !slices.Equal(exts, []string{talos.QemuGuestAgent, "siderolabs/nvme-cli"}) {
		t.Errorf("catalog after registration: %v %v", exts, ok)
	}
}

func TestImageAnswers(t *testing.T) {
	t.Parallel()

	s := start(t)
	ctx := context.Background()
	qga := talos.SchematicID([]string{talos.QemuGuestAgent})

	// The empty schematic and common selections of official extensions are
	// already on the public factory; other hosts are not the factory's.
	for _, u := range []string{
		"https://factory.talos.dev/image/376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba/v1.12.5/nocloud-amd64.iso",
		"https://factory.talos.dev/image/" + qga + "/v1.11.3/nocloud-amd64.raw.xz",
		"https://github.com/siderolabs/talos/releases/download/v1.12.5/nocloud-amd64.iso",
		"https://example.com/image/" + strings.Repeat("a", 64) + "/v1.12.5/nocloud-amd64.iso",
	} {
		if err := s.Fetch(ctx, u); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}

	unknownExt := &Schematic{Customization: Customization{SystemExtensions: SystemExtensions{OfficialExtensions: []string{"siderolabs/no-such-thing"}}}}

	id, err := s.Register(unknownExt) // the factory accepts any name at registration
	if err != nil {
		t.Fatal(err)
	}

	for u, want := range map[string]string{
		s.URL() + "/image/" + id + "/v1.12.5/nocloud-amd64.iso":                      `official extension "siderolabs/no-such-thing" is not available for Talos version v1.12.5`,
		s.URL() + "/image/" + qga + "/v1.12.5/nocloud-amd64.exe":                     "unknown image path",
		s.URL() + "/image/" + qga + "/banana/nocloud-amd64.iso":                      "internal server error",
		s.URL() + "/image/" + strings.Repeat("b", 64) + "/v1.12.5/nocloud-amd64.iso": "not found",
	} {
		var he *HTTPError
		if err := s.Fetch(ctx, u); !errors.As(err, &he) || !strings.Contains(he.Message, want) {
			t.Errorf("%s: %v, want a message containing %q", u, err, want)
		}

		code, body := do(t, "GET", u, "")
		if code < 400 || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d %q", u, code, body)
		}
	}

	s.AddExtensions("siderolabs/no-such-thing")

	if err := s.Fetch(ctx, s.URL()+"/image/"+id+"/v1.12.5/nocloud-amd64.iso"); err != nil {
		t.Errorf("after AddExtensions: %v", err)
	}
}

func TestHTTPRefusals(t *testing.T) {
	t.Parallel()

	s := start(t)

	for body, want := range map[string]string{
		"customization:\n  systemExtension: {}\n": "field systemExtension not found",
		"owner: alice\n": "owner field is only supported in Enterprise edition",
	} {
		if code, resp := do(t, "POST", s.URL()+"/schematics", body); code != http.StatusBadRequest || !strings.Contains(resp, want) {
			t.Errorf("POST %q: %d %q, want 400 with %q", body, code, resp, want)
		}
	}

	if s.Registrations() != 0 {
		t.Errorf("refused schematics were registered")
	}

	code, resp := do(t, "GET", s.URL()+"/version/v1.12.5/extensions/official", "")
	if code != http.StatusOK {
		t.Fatalf("extension list: %d %s", code, resp)
	}

	var list []struct{ Name string }
	if err := json.Unmarshal([]byte(resp), &list); err != nil {
		t.Fatal(err)
	}

	names := map[string]bool{}
	for _, e := range list {
		names[e.Name] = true
	}

	for _, e := range talos.OfficialExtensions {
		if !names[e] {
			t.Errorf("the factory does not list %s, which the simulator's catalog offers", e)
		}
	}

	if _, err := Start(Options{Listen: "0.0.0.0:0"}); err == nil {
		t.Error("a factory listening beyond loopback started")
	}
}

// The registry frontend: an installer of a schematic the factory lacks is
// "not found"; registered, it pulls; other registries are not its business.
func TestPullInstaller(t *testing.T) {
	t.Parallel()

	s := start(t)
	sch, _ := ParseSchematic([]byte("customization:\n  extraKernelArgs: [console=ttyS0]\n")) //nolint:errcheck // literal
	id, _ := sch.ID()                                                                        //nolint:errcheck // test
	host := strings.TrimPrefix(s.URL(), "http://")

	for _, ref := range []string{
		"factory.talos.dev/nocloud-installer/" + id + ":v1.12.5",
		host + "/installer/" + id + ":v1.12.5",
	} {
		if err := s.PullInstaller(ref); err == nil || !strings.HasSuffix(err.Error(), ": not found") {
			t.Errorf("%s before registration: %v", ref, err)
		}
	}

	if _, err := s.Register(sch); err != nil {
		t.Fatal(err)
	}

	for _, ref := range []string{
		"factory.talos.dev/nocloud-installer/" + id + ":v1.12.5",
		host + "/installer-secureboot/" + id + ":v1.12.5",
		"ghcr.io/siderolabs/installer:v1.12.5",
		"registry.example.com/nocloud-installer/" + strings.Repeat("c", 64) + ":v1.12.5",
	} {
		if err := s.PullInstaller(ref); err != nil {
			t.Errorf("%s: %v", ref, err)
		}
	}

	bad, err := s.Register(&Schematic{Customization: Customization{SystemExtensions: SystemExtensions{OfficialExtensions: []string{"siderolabs/nope"}}}})
	if err != nil {
		t.Fatal(err)
	}

	if err := s.PullInstaller("factory.talos.dev/nocloud-installer/" + bad + ":v1.12.5"); err == nil || !strings.Contains(err.Error(), "400 Bad Request") {
		t.Errorf("installer with an unknown extension: %v", err)
	}
}
