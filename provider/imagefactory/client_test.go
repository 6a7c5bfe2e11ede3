package imagefactory

import (
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/factory"
)

func serve(t *testing.T, h http.Handler) string {
	t.Helper()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Second}

	go srv.Serve(ln) //nolint:errcheck // closed below

	t.Cleanup(func() { srv.Close() })

	return "http://" + ln.Addr().String()
}

// Against the lab's factory: register, get, list; the IDs agree with the
// provider's offline computation and the canonical form parses back.
func TestClientAgainstLabFactory(t *testing.T) {
	t.Parallel()

	f, err := factory.Start(factory.Options{})
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { f.Close() })

	c := &Client{BaseURL: f.URL() + "/"}
	want := talosconfig.Schematic{
		Extensions: []string{"siderolabs/qemu-guest-agent"}, KernelArgs: []string{"console=ttyS0"},
		Meta: []talosconfig.MetaValue{{Key: 10, Value: "v"}},
	}
	body, _ := want.YAML() //nolint:errcheck // valid
	wantID, _ := want.ID() //nolint:errcheck // valid

	if _, err := c.Get(t.Context(), wantID); !IsNotFound(err) {
		t.Fatalf("Get before registration: %v, want a 404", err)
	}

	id, canonical, err := c.Register(t.Context(), body)
	if err != nil || id != wantID || canonical != string(body) {
		t.Fatalf("Register = %s, %q, %v; want %s and the body back", id, canonical, err, wantID)
	}

	got, err := c.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}

	parsed, err := ParseSchematic(got)
	if err != nil {
		t.Fatal(err)
	}

	if pid, _ := parsed.ID(); pid != id {
		t.Errorf("the schematic read back has ID %s, want %s", pid, id)
	}

	names, err := c.OfficialExtensions(t.Context(), "v1.12.5")
	if err != nil || !slices.Contains(names, "siderolabs/qemu-guest-agent") || !slices.Contains(names, "siderolabs/iscsi-tools") {
		t.Errorf("OfficialExtensions = %v, %v", names, err)
	}

	if _, _, err := c.Register(t.Context(), []byte("customization:\n  extensions: []\n")); err == nil ||
		!strings.Contains(err.Error(), "400 Bad Request") || !strings.Contains(err.Error(), "field extensions not found") {
		t.Errorf("Register of a malformed schematic: %v", err)
	}
}

// Transient answers (5xx, 429) are retried; a 4xx is final.
func TestClientRetries(t *testing.T) {
	t.Parallel()

	var calls atomic.Int32

	base := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)

		switch {
		case r.URL.Path == "/schematics" && n < 3:
			http.Error(w, "busy", http.StatusServiceUnavailable)
		case r.URL.Path == "/schematics":
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"id":"abc","schematic":"customization: {}\n"}`))
		default:
			http.Error(w, "schematic not found", http.StatusNotFound)
		}
	}))

	c := &Client{BaseURL: base, Backoff: time.Millisecond}

	if id, _, err := c.Register(t.Context(), []byte("{}")); err != nil || id != "abc" || calls.Load() != 3 {
		t.Errorf("Register = %q, %v after %d calls; want success on the third", id, err, calls.Load())
	}

	calls.Store(10)

	if _, err := c.Get(t.Context(), "x"); !IsNotFound(err) || calls.Load() != 11 {
		t.Errorf("Get = %v after %d calls; want one 404", err, calls.Load()-10)
	}

	c.Attempts = 2
	calls.Store(0)

	if _, _, err := c.Register(t.Context(), []byte("{}")); err == nil || !strings.Contains(err.Error(), "503 Service Unavailable: busy") {
		t.Errorf("Register with 2 attempts = %v", err)
	}
}

func TestParseSchematicRefusesWhatItDoesNotManage(t *testing.T) {
	t.Parallel()

	if _, err := ParseSchematic([]byte("overlay:\n    image: siderolabs/sbc-raspberrypi\n    name: rpi_generic\ncustomization: {}\n")); err == nil {
		t.Error("a schematic with an overlay parsed")
	}

	s, err := ParseSchematic(nil)
	if err != nil || len(s.Extensions) != 0 {
		t.Errorf("empty body: %+v %v", s, err)
	}
}
