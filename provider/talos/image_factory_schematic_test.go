package talos

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/blang/semver"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi-go-provider/integration"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/factory"
)

func schematicServer(t *testing.T) integration.Server {
	t.Helper()

	prov, err := infer.NewProviderBuilder().WithResources(infer.Resource(&ImageFactorySchematic{backoff: time.Millisecond})).Build()
	if err != nil {
		t.Fatal(err)
	}

	s, err := integration.NewServer(t.Context(), "proxmoxtalos", semver.MustParse("0.0.1"), integration.WithProvider(prov))
	if err != nil {
		t.Fatal(err)
	}

	return s
}

func labFactory(t *testing.T) *factory.Server {
	t.Helper()

	f, err := factory.Start(factory.Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { f.Close() })

	return f
}

func schematicInputs(factoryURL string, extra map[string]property.Value) map[string]property.Value {
	in := map[string]property.Value{
		"factoryUrl":   str(factoryURL),
		"talosVersion": str("v1.12.5"),
		"extensions":   strs("siderolabs/qemu-guest-agent", "siderolabs/nvme-cli"),
		"kernelArgs":   strs("console=ttyS0"),
	}
	for k, v := range extra {
		in[k] = v
	}

	return in
}

// Create registers the schematic with the factory (preview does not), the
// factory and the simulator's catalog then know it, refresh sees it, a
// factory that lost it makes the resource disappear, and changes replace or
// update as the ID says.
func TestImageFactorySchematicLifecycle(t *testing.T) {
	t.Parallel()

	f := labFactory(t)
	r := newRes(t, schematicServer(t), "ImageFactorySchematic", "custom")

	want, err := talosconfig.Schematic{
		Extensions: []string{"siderolabs/qemu-guest-agent", "siderolabs/nvme-cli"}, KernelArgs: []string{"console=ttyS0"},
	}.ID()
	if err != nil {
		t.Fatal(err)
	}

	iso := f.URL() + "/image/" + want + "/v1.12.5/nocloud-amd64.iso"
	if err := f.Fetch(t.Context(), iso); err == nil {
		t.Fatal("the factory serves the schematic before it was registered")
	}

	if err := r.create(schematicInputs(f.URL(), nil)); err != nil {
		t.Fatal(err)
	}

	if f.Registrations() != 1 {
		t.Errorf("registrations after preview and create = %d, want 1 (preview posts nothing)", f.Registrations())
	}

	if r.id != want || r.out("schematicId") != want {
		t.Errorf("id %q / output %q, want %s", r.id, r.out("schematicId"), want)
	}

	if r.out("isoUrl") != iso || r.out("installerImage") != strings.TrimPrefix(f.URL(), "http://")+"/nocloud-installer/"+want+":v1.12.5" {
		t.Errorf("isoUrl %q installerImage %q", r.out("isoUrl"), r.out("installerImage"))
	}

	if err := f.Fetch(t.Context(), iso); err != nil {
		t.Errorf("the factory does not serve the ISO after create: %v", err)
	}

	if exts, ok := f.Catalog().Lookup(want); !ok || len(exts) != 2 {
		t.Errorf("catalog lookup after create: %v %v", exts, ok)
	}

	if rd, err := r.read(); err != nil || rd.ID != want {
		t.Fatalf("read: id %q, %v", rd.ID, err)
	}

	// A new Talos version is an in-place update (same schematic); other
	// extensions are another schematic: a replacement.
	if _, d := r.diff(schematicInputs(f.URL(), map[string]property.Value{"talosVersion": str("v1.12.6")})); !d.HasChanges ||
		d.DetailedDiff["talosVersion"].Kind != p.Update {
		t.Errorf("version bump diff: %+v", d)
	}

	for k, v := range map[string]property.Value{
		"extensions": strs("siderolabs/qemu-guest-agent"),
		"kernelArgs": strs("console=ttyS1"),
		"meta":       property.New([]property.Value{property.New(map[string]property.Value{"key": property.New(10.0), "value": str("x")})}),
	} {
		if _, d := r.diff(schematicInputs(f.URL(), map[string]property.Value{k: v})); len(d.DetailedDiff) != 1 || d.DetailedDiff[k].Kind != p.UpdateReplace {
			t.Errorf("%s change diff: %+v, want a replacement", k, d.DetailedDiff)
		}
	}

	if _, d := r.diff(schematicInputs(f.URL(), nil)); d.HasChanges {
		t.Errorf("unchanged inputs diff: %+v", d.DetailedDiff)
	}

	if err := r.update(r.check(schematicInputs(f.URL(), map[string]property.Value{"talosVersion": str("v1.12.6")}))); err != nil {
		t.Fatal(err)
	}

	if !strings.Contains(r.out("isoUrl"), "/v1.12.6/") || f.Registrations() != 2 {
		t.Errorf("after update: isoUrl %q, registrations %d", r.out("isoUrl"), f.Registrations())
	}

	if err := r.delete(); err != nil {
		t.Fatal(err)
	}

	// A factory that does not have the schematic (a fresh self-hosted one):
	// refresh drops the resource so that the next up registers it again.
	f2 := labFactory(t)
	r.state = r.state.Set("factoryUrl", str(f2.URL()))

	if rd, err := r.read(); err != nil || rd.ID != "" {
		t.Errorf("read against a factory without the schematic: id %q, %v; want the resource gone", rd.ID, err)
	}
}

func TestImageFactorySchematicRefusals(t *testing.T) {
	t.Parallel()

	f := labFactory(t)
	s := schematicServer(t)

	// An extension the factory does not have: it would accept the schematic
	// but refuse to build its images, so the preview fails already, naming
	// the closest official extension, and nothing is registered.
	r := newRes(t, s, "ImageFactorySchematic", "typo")
	checked := r.check(schematicInputs(f.URL(), map[string]property.Value{"extensions": strs("siderolabs/qemu-guest-agnet")}))

	for _, dry := range []bool{true, false} {
		_, err := s.Create(p.CreateRequest{Urn: r.urn, Properties: checked, DryRun: dry})
		if err == nil || !strings.Contains(err.Error(), `no official extension "siderolabs/qemu-guest-agnet" (did you mean siderolabs/qemu-guest-agent?) for Talos v1.12.5`) {
			t.Errorf("create (preview %v) with a misspelt extension: %v", dry, err)
		}
	}

	// A factory that does not answer: the preview only warns (it may run
	// offline), create fails.
	down := schematicInputs("http://127.0.0.1:1", map[string]property.Value{"extensions": strs("siderolabs/qemu-guest-agent")})
	if _, err := s.Create(p.CreateRequest{Urn: r.urn, Properties: r.check(down), DryRun: true}); err != nil {
		t.Errorf("preview against a factory that does not answer: %v", err)
	}

	if f.Registrations() != 0 {
		t.Errorf("a schematic with an unknown extension was registered")
	}

	// Check catches what needs no factory.
	for name, in := range map[string]map[string]property.Value{
		"extensions":   schematicInputs(f.URL(), map[string]property.Value{"extensions": strs("qemu-guest-agent")}),
		"meta[0].key":  schematicInputs(f.URL(), map[string]property.Value{"meta": property.New([]property.Value{property.New(map[string]property.Value{"key": property.New(300.0), "value": str("x")})})}),
		"factoryUrl":   schematicInputs("ftp://mirror", nil),
		"talosVersion": schematicInputs(f.URL(), map[string]property.Value{"talosVersion": str("latest")}),
	} {
		resp, err := s.Check(p.CheckRequest{Urn: r.urn, Inputs: property.NewMap(in)})
		if err != nil {
			t.Fatal(err)
		}

		if len(resp.Failures) != 1 || resp.Failures[0].Property != name {
			t.Errorf("%s: failures %+v", name, resp.Failures)
		}
	}

	// skipRegistration contacts nothing (this address refuses connections).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	dead := "http://" + ln.Addr().String()
	ln.Close()

	skip := newRes(t, s, "ImageFactorySchematic", "mirror")
	if err := skip.create(schematicInputs(dead, map[string]property.Value{"skipRegistration": property.New(true)})); err != nil {
		t.Errorf("skipRegistration create: %v", err)
	}

	if rd, err := skip.read(); err != nil || rd.ID != skip.id {
		t.Errorf("skipRegistration read: %q %v", rd.ID, err)
	}

	unreachable := newRes(t, s, "ImageFactorySchematic", "unreachable")
	if err := unreachable.create(schematicInputs(dead, map[string]property.Value{"extensions": strs()})); err == nil ||
		!strings.Contains(err.Error(), "registering schematic") || !strings.Contains(err.Error(), "skipRegistration") {
		t.Errorf("create against an unreachable factory: %v", err)
	}
}

// A factory that answers another ID (an Enterprise factory adds an owner)
// is refused: images built from the local ID would not exist there.
func TestImageFactorySchematicIDMismatch(t *testing.T) {
	t.Parallel()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":"` + strings.Repeat("ab", 32) + `","schematic":"owner: alice\n"}`))
	})}

	go srv.Serve(ln) //nolint:errcheck // closed below

	t.Cleanup(func() { srv.Close() })

	r := newRes(t, schematicServer(t), "ImageFactorySchematic", "enterprise")

	err = r.create(schematicInputs("http://"+ln.Addr().String(), map[string]property.Value{"extensions": strs()}))
	if err == nil || !strings.Contains(err.Error(), "registered the schematic as "+strings.Repeat("ab", 32)) {
		t.Errorf("create against a factory answering another ID: %v", err)
	}
}

// Import by ID reads the schematic's customizations back from the factory.
func TestImageFactorySchematicImport(t *testing.T) {
	t.Parallel()

	f := labFactory(t)
	sch, _ := factory.ParseSchematic([]byte("customization:\n  extraKernelArgs: [console=ttyS0]\n  meta:\n    - key: 10\n      value: net\n  systemExtensions:\n    officialExtensions: [siderolabs/iscsi-tools]\n")) //nolint:errcheck // literal

	id, err := f.Register(sch)
	if err != nil {
		t.Fatal(err)
	}

	r := newRes(t, schematicServer(t), "ImageFactorySchematic", "imported")

	rd, err := r.s.Read(p.ReadRequest{ID: id, Urn: r.urn, Inputs: property.NewMap(map[string]property.Value{"factoryUrl": str(f.URL())})})
	if err != nil || rd.ID != id {
		t.Fatalf("import: %q %v", rd.ID, err)
	}

	if got := rd.Inputs.Get("extensions"); !got.IsArray() || got.AsArray().Len() != 1 || got.AsArray().Get(0).AsString() != "siderolabs/iscsi-tools" {
		t.Errorf("imported extensions %v", got)
	}

	if got := rd.Inputs.Get("meta"); !got.IsArray() || got.AsArray().Len() != 1 {
		t.Errorf("imported meta %v", got)
	}

	if rd.Properties.Get("schematicId").AsString() != id {
		t.Errorf("imported state %v", rd.Properties)
	}
}

// Every input and output is described; nothing here is secret.
func TestImageFactorySchematicSchema(t *testing.T) {
	t.Parallel()

	resp, err := schematicServer(t).GetSchema(p.GetSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}

	var spec obj
	if err := json.Unmarshal([]byte(resp.Schema), &spec); err != nil {
		t.Fatal(err)
	}

	const token = "proxmoxtalos:talos:ImageFactorySchematic"

	res := spec.get("resources", token)
	checkDescribed(t, token, res, res.get("properties"), res.get("inputProperties"))
	checkDescribed(t, "SchematicMeta", spec.get("types", "proxmoxtalos:talos:SchematicMeta"), spec.get("types", "proxmoxtalos:talos:SchematicMeta", "properties"))

	if d := res.get("inputProperties", "factoryUrl")["default"]; d != talosconfig.DefaultFactoryURL {
		t.Errorf("factoryUrl default = %v", d)
	}
}
