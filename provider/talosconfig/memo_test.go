package talosconfig

import (
	"strings"
	"testing"
)

// The kept base (and its parsed form, which the first strategic merge patch
// starts from) must give byte for byte the configuration that parsing the
// base's text gives: a different text would be a configuration change on
// every node of an existing cluster.
func TestGenerateFromAKeptBaseIsByteIdentical(t *testing.T) {
	hostname := "apiVersion: v1alpha1\nkind: HostnameConfig\nauto: off\nhostname: node-1\n"
	kubelet := "machine:\n  kubelet:\n    extraArgs:\n      rotate-server-certificates: \"true\"\n"
	cases := []struct {
		name    string
		version string
		role    Role
		patches []string
	}{
		{"control plane, two strategic patches", "v1.12.5", RoleControlPlane, []string{kubelet, hostname}},
		{"worker, one patch", "v1.12.5", RoleWorker, []string{hostname}},
		{"worker, no patches", "v1.12.5", RoleWorker, nil},
		{"json6902 on a single-document contract", "v1.11.5", RoleWorker,
			[]string{`[{"op": "add", "path": "/machine/nodeLabels", "value": {"a": "b"}}]`, kubelet}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := baseInput(t, c.version, c.role, c.patches...)
			first := mustGenerate(t, in) // keeps the base
			again := mustGenerate(t, in) // from the kept base
			b, err := baseFor(in, Metal)
			if err != nil {
				t.Fatal(err)
			}
			steps, err := applyPatches(b.yaml, nil, in.Patches, nil) // every step from text
			if err != nil {
				t.Fatal(err)
			}
			want := steps[len(steps)-1]
			if first != want || again != want {
				t.Fatalf("configurations differ from the one patched from the base's text (first %v, again %v)",
					first == want, again == want)
			}
		})
	}
}

func TestKeptBasesAreKeyedByEverythingTheyDependOn(t *testing.T) {
	in := baseInput(t, "v1.12.5", RoleWorker)
	a := mustGenerate(t, in)
	other := in
	other.InstallDisk = "/dev/vda"
	if b := mustGenerate(t, other); b == a || !strings.Contains(b, "/dev/vda") {
		t.Fatal("another install disk gave the kept base of the first")
	}
	other = in
	other.Secrets = secondBundle(t, "v1.12.5")
	if b := mustGenerate(t, other); b == a {
		t.Fatal("another bundle gave the kept base of the first")
	}
	other = in
	other.Role = RoleControlPlane
	if b := mustGenerate(t, other); b == a {
		t.Fatal("another role gave the kept base of the first")
	}
}

// A kept validation answers as the validation would: the same error for an
// invalid configuration, per mode.
func TestKeptValidationsAnswerAsValidation(t *testing.T) {
	cfg := mustGenerate(t, baseInput(t, "v1.12.5", RoleWorker))
	noInstall := strings.Replace(cfg, "disk: /dev/sda", "disk: \"\"", 1)
	if noInstall == cfg {
		t.Fatal("test setup: the configuration names no install disk")
	}
	_, err1 := Validate(noInstall, Metal, "v1.12.5")
	_, err2 := Validate(noInstall, Metal, "v1.12.5")
	if err1 == nil || err2 == nil || err1.Error() != err2.Error() {
		t.Fatalf("metal mode without an install disk: %v, then %v; want the same error twice", err1, err2)
	}
	if _, err := Validate(noInstall, Cloud, "v1.12.5"); err != nil {
		t.Fatalf("cloud mode (no install needed) answered as metal mode: %v", err)
	}
}

// The kept bases are keyed by every input: no SANs and one empty SAN are
// different inputs (the empty one is refused), in either order.
func TestKeptBaseKeepsNilAndEmptySANApart(t *testing.T) {
	in := baseInput(t, "v1.12.5", RoleWorker)
	in.SANs = nil
	mustGenerate(t, in)
	in.SANs = []string{""}
	if _, err := Generate(in); err == nil || !strings.Contains(err.Error(), "SAN 0") {
		t.Fatalf("SANs [\"\"] after SANs nil: err %v, want the SAN refused", err)
	}

	in = baseInput(t, "v1.12.5", RoleControlPlane)
	in.SANs = []string{""}
	if _, err := Generate(in); err == nil {
		t.Fatal(`SANs [""] is accepted`)
	}
	in.SANs = nil
	mustGenerate(t, in)
}
