package talos

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// The configurations the generator makes, for every Talos minor it supports,
// both roles, with and without patches (strategic and JSON), are in the form
// ConfigDigest hashes: the SHA-256 of the text itself is its digest. That is
// what lets ConfigHasDigest answer a no-op Diff without encoding the text,
// and what its argument rests on (parse + encode of such a text gives the
// text back). If machinery ever changes that, this fails, and the fast path
// would only miss (ConfigHasDigest then asks ConfigDigest), never lie: the
// second half checks that it answers as ConfigDigest does either way.
func TestGeneratedConfigurationsHashToTheirDigest(t *testing.T) {
	t.Parallel()

	applyBundleOnce.Do(func() { applyBundle, applyBundleErr = talosconfig.NewSecrets("v1.12.5", applyTestNow) })
	if applyBundleErr != nil {
		t.Fatal(applyBundleErr)
	}

	patches := [][]string{
		nil,
		{"machine:\n  kubelet:\n    extraArgs:\n      max-pods: \"150\"\n"},
		{`[{"op": "add", "path": "/machine/sysctls", "value": {"vm.max_map_count": "262144"}}]`,
			"cluster:\n  proxy:\n    disabled: true\n"},
	}

	multiDocument := map[string]bool{"v1.12.7": true, "v1.13.9": true, talosconfig.DefaultTalosVersion: true}

	for _, version := range []string{"v1.8.4", "v1.10.9", "v1.11.6", "v1.12.7", "v1.13.9", talosconfig.DefaultTalosVersion} {
		for _, role := range []talosconfig.Role{talosconfig.RoleControlPlane, talosconfig.RoleWorker} {
			for i, ps := range patches {
				if multiDocument[version] && len(ps) > 0 && strings.HasPrefix(ps[0], "[") {
					continue // JSON patches do not apply to the multi-document configurations of 1.12 contracts
				}

				res, err := talosconfig.Generate(talosconfig.Input{
					ClusterName: "lab", Endpoint: "https://10.5.0.10:6443", Role: role, Secrets: applyBundle,
					TalosVersion: version, InstallDisk: "/dev/sda", Patches: ps,
				})
				if err != nil {
					t.Fatalf("%s %s patches %d: %v", version, role, i, err)
				}

				digest, err := talosapi.ConfigDigest([]byte(res.Config))
				if err != nil {
					t.Fatal(err)
				}

				sum := sha256.Sum256([]byte(res.Config))
				if hex.EncodeToString(sum[:]) != digest {
					t.Errorf("%s %s patches %d: the generated text's SHA-256 is not its digest (not in the digest's form)", version, role, i)
				}

				assertHasDigestAnswersAsConfigDigest(t, res.Config)
			}
		}
	}
}

// ConfigHasDigest answers what comparing ConfigDigest with the digest does,
// for the digests a ConfigurationApply state holds: the text's own (an apply
// of it, a node running it), another configuration's (a node changed out of
// band, seen by a refresh), none (an operation that did not finish); and for a
// text with comments (not in the digest's form, same digest), and one that
// does not parse.
func TestConfigHasDigestAnswersAsConfigDigest(t *testing.T) {
	t.Parallel()

	assertHasDigestAnswersAsConfigDigest(t, testConfig(t, "v1.12.5"))
	assertHasDigestAnswersAsConfigDigest(t, testConfig(t, "v1.12.5", "machine:\n  kubelet:\n    extraArgs:\n      max-pods: \"150\"\n"))
	assertHasDigestAnswersAsConfigDigest(t, "# a comment the digest ignores\n"+testConfig(t, "v1.12.5"))
	assertHasDigestAnswersAsConfigDigest(t, "version: v1alpha1\nmachine: [not a map\n")
}

func assertHasDigestAnswersAsConfigDigest(t *testing.T, text string) {
	t.Helper()

	own, ownErr := talosapi.ConfigDigest([]byte(text))
	other, err := talosapi.ConfigDigest([]byte(testConfig(t, "v1.12.5", "machine:\n  sysctls:\n    kernel.pid_max: \"65536\"\n")))
	if err != nil {
		t.Fatal(err)
	}

	// Only ConfigDigest values (or none) are stored: the SHA-256 of a text
	// with comments, say, is never one (no encoding has comments).
	for _, stored := range []string{own, other, ""} {
		same, err := talosapi.ConfigHasDigest([]byte(text), stored)
		want := ownErr == nil && own == stored

		if same != want || (err != nil) != (ownErr != nil) {
			t.Errorf("ConfigHasDigest(text, %.12s) = %v, %v; ConfigDigest says %v (err %v)", stored, same, err, want, ownErr)
		}
	}
}
