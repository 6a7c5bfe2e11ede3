package talosapi

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"

	"github.com/proxmoxtalos/proxmoxtalos/provider/memo"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// loadShared answers what configloader.NewFromBytes answers, for the
// configurations the component generates (every multi-document contract,
// both roles, per-node documents) and for texts that stress how a YAML
// stream splits into documents or how documents clash: the same error text,
// or the same documents (encoded alike), bytes and facts.
func TestLoadSharedIsConfigloaders(t *testing.T) {
	t.Parallel()

	texts := map[string]string{}

	bundle, err := talosconfig.NewSecrets("v1.12.7", time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}

	for _, version := range []string{"v1.11.6", "v1.12.7", "v1.13.9", talosconfig.DefaultTalosVersion} {
		for _, role := range []talosconfig.Role{talosconfig.RoleControlPlane, talosconfig.RoleWorker} {
			for node := range 2 {
				var patches []string
				if version != "v1.11.6" {
					patches = append(patches, fmt.Sprintf("apiVersion: v1alpha1\nkind: HostnameConfig\nauto: off\nhostname: %s-%d\n", role, node))
				}

				res, err := talosconfig.Generate(talosconfig.Input{
					ClusterName: "lab", Endpoint: "https://10.5.0.10:6443", Role: role, Secrets: bundle,
					TalosVersion: version, InstallDisk: "/dev/sda", Patches: patches,
				})
				if err != nil {
					t.Fatalf("%s %s: %v", version, role, err)
				}

				texts[fmt.Sprintf("%s %s %d", version, role, node)] = res.Config
			}
		}
	}

	gen := texts["v1.12.7 controlplane 0"]
	v1, rest, ok := strings.Cut(gen, "\n---\n")
	if !ok || !strings.Contains(rest, "HostnameConfig") {
		t.Fatalf("the 1.12 configuration is not v1alpha1 first, then documents:\n%.200s", gen)
	}

	v1 += "\n"
	hostname := "apiVersion: v1alpha1\nkind: HostnameConfig\nauto: off\nhostname: x\n"

	for name, text := range map[string]string{
		"with comments":          "# generated\n" + gen + "# end\n",
		"empty documents":        "---\n" + v1 + "---\n---\n" + hostname + "---\n",
		"comment-only document":  v1 + "---\n# nothing here\n---\n" + hostname,
		"null document":          v1 + "---\nnull\n---\n" + hostname,
		"end marker":             v1 + "...\n---\n" + hostname,
		"marker with comment":    v1 + "--- # next\n" + hostname,
		"directive":              "%YAML 1.2\n---\n" + v1 + "---\n" + hostname,
		"CRLF":                   strings.ReplaceAll(v1+"---\n"+hostname, "\n", "\r\n"),
		"two v1alpha1":           v1 + "---\n" + v1,
		"two hostnames":          v1 + "---\n" + hostname + "---\n" + hostname,
		"unknown key":            v1 + "---\n" + hostname + "bogus: 1\n",
		"unknown kind":           v1 + "---\napiVersion: v1alpha1\nkind: NoSuchConfig\n",
		"scalar document":        v1 + "---\njust text\n",
		"marker inside a string": v1 + "---\napiVersion: v1alpha1\nkind: HostnameConfig\nhostname: \"a\n---\nb\"\n",
		"marker in block":        v1 + "---\napiVersion: v1alpha1\nkind: HostnameConfig\nhostname: |\n  a\n---\n  b\n",
		"no trailing newline":    v1 + "---\n" + strings.TrimSuffix(hostname, "\n"),
		"indented marker":        v1 + "  ---\n" + hostname,
		"not YAML":               v1 + "---\n{[\n",
		"empty":                  "",
		"only markers":           "---\n---\n",
	} {
		texts[name] = text
	}

	for name, text := range texts {
		want, wantErr := configloader.NewFromBytes([]byte(text))
		got, gotErr := loadShared([]byte(text))

		if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
			t.Errorf("%s: loadShared error %v, configloader %v", name, gotErr, wantErr)

			continue
		}

		if wantErr != nil {
			continue
		}

		gotBytes, _ := got.Bytes()   //nolint:errcheck // a read-only container's are its text
		wantBytes, _ := want.Bytes() //nolint:errcheck

		if string(gotBytes) != string(wantBytes) || !got.Readonly() {
			t.Errorf("%s: loadShared's bytes (read only %v) are not the text's", name, got.Readonly())
		}

		if g, w := encodeAll(t, got), encodeAll(t, want); g != w {
			t.Errorf("%s: loadShared's documents encode as\n%s\nconfigloader's as\n%s", name, g, w)
		}

		if g, w := factsOfConfig(got, true), factsOfConfig(want, true); g != w {
			t.Errorf("%s: facts %+v, configloader's %+v", name, g, w)
		}
	}

	// the generated configurations took the shared path (their v1alpha1
	// documents are kept), else this compared configloader with itself
	if _, kept := sharedDocuments.Get(memo.KeyOf(v1)); !kept {
		t.Error("the v1alpha1 document of a generated 1.12 configuration was not kept: loadShared did not split it")
	}
}

// A document kept is the one every later text with it gets, and reading
// facts off a configuration leaves it as it was.
func TestLoadSharedSharesDocumentsReadOnly(t *testing.T) {
	t.Parallel()

	base := string(testMachineConfig(t, "/dev/sda"))

	cfg, err := configloader.NewFromBytes([]byte(base))
	if err != nil {
		t.Fatal(err)
	}

	enc, err := cfg.EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))
	if err != nil {
		t.Fatal(err)
	}

	v1, _, ok := strings.Cut(string(enc), "\n---\n")
	if !ok {
		t.Fatal("the test configuration has one document")
	}

	v1 += "\n# a text of this test's own\n"

	a, err := loadShared([]byte(v1 + "---\napiVersion: v1alpha1\nkind: HostnameConfig\nauto: off\nhostname: a\n"))
	if err != nil {
		t.Fatal(err)
	}

	before := encodeAll(t, a)
	_ = factsOfConfig(a, true)

	b, err := loadShared([]byte(v1 + "---\napiVersion: v1alpha1\nkind: HostnameConfig\nauto: off\nhostname: b\n"))
	if err != nil {
		t.Fatal(err)
	}

	if a.Documents()[0] != b.Documents()[0] {
		t.Error("two texts with one v1alpha1 document got two parses of it")
	}

	if a.Documents()[1] == b.Documents()[1] {
		t.Error("two different HostnameConfig documents are one")
	}

	if after := encodeAll(t, a); after != before {
		t.Error("reading facts changed the shared document")
	}
}

func encodeAll(t *testing.T, cfg interface {
	EncodeBytes(...encoder.Option) ([]byte, error)
}) string {
	t.Helper()

	b, err := cfg.EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))
	if err != nil {
		t.Fatal(err)
	}

	return string(b)
}
