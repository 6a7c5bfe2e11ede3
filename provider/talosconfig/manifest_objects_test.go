package talosconfig

import (
	"strings"
	"testing"
)

// Inline manifests parse as a control plane renders them: YAML 1.1 scalars
// (sigs.k8s.io/yaml), comment-only documents skipped, Lists unwrapped; the
// digest of the objects ignores how the text is written, and changes with
// what the objects say.
func TestManifestObjects(t *testing.T) {
	t.Parallel()
	objs, err := ManifestObjects([]byte("# only a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  on: yes\n" +
		"--- # next\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ServiceAccount, metadata: {name: b}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[0]["kind"] != "ConfigMap" || objs[1]["kind"] != "ServiceAccount" {
		t.Fatalf("objects %v", objs)
	}
	// YAML 1.1: the key `on` is "true" and the value `yes` is true, as
	// Talos renders them (a YAML 1.2 parser keeps both strings).
	if d, _ := objs[0]["data"].(map[string]any); d["true"] != true {
		t.Errorf("data %v, want YAML 1.1 booleans", objs[0]["data"])
	}

	same, err := ManifestObjects([]byte("{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"a\"}, \"data\": {\"true\": true}}\n---\n" +
		"apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: b\n"))
	if err != nil {
		t.Fatal(err)
	}
	if ObjectsDigest(same) != ObjectsDigest(objs) {
		t.Errorf("the same objects written otherwise digest differently: %s, %s", ObjectsDigest(same), ObjectsDigest(objs))
	}
	other, _ := ManifestObjects([]byte("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: c\n"))
	if ObjectsDigest(other) == ObjectsDigest(objs) {
		t.Error("other objects digest alike")
	}

	if _, err := ManifestObjects([]byte("a: 1\n---x\nb: 2\n")); err == nil || !strings.Contains(err.Error(), "separator") {
		t.Errorf("a bad separator: %v", err)
	}
	if _, err := ManifestObjects([]byte("- just\n- a list\n")); err == nil {
		t.Error("a document that is not an object parsed")
	}
}

// An inline manifest's line carries the digest of its objects after the
// mark; one that does not parse has none.
func TestInlineManifestLineHasObjects(t *testing.T) {
	t.Parallel()
	lines := BootstrapManifestInputs(manifestsConfig(t, RoleControlPlane, manifestsBefore))
	for _, l := range lines {
		if strings.HasPrefix(l, "inlineManifest ") && !strings.Contains(l, InlineObjectsMark+"sha256:") {
			t.Errorf("line %q has no objects digest", l)
		}
	}
}
