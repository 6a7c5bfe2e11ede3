package talos

import (
	"strings"
	"testing"
)

func TestEmulatedVersion(t *testing.T) {
	t.Parallel()

	for _, c := range []struct {
		cluster, binary, want, note string
	}{
		{"v1.35.2", "v1.35.4", "", ""},
		{"v1.34.1", "v1.35.4", "1.34", ""},
		{"v1.32.3", "v1.35.4", "1.32", ""},
		{"v1.31.4", "v1.35.4", "", "older than the lab's kube-apiserver v1.35.4 can emulate (1.32)"},
		{"v1.36.0", "v1.35.4", "", "newer than the lab's kube-apiserver v1.35.4"},
		{"v1.30.0", "v1.33.1", "", "can emulate (1.31)"},
		{"latest", "v1.35.4", "", ""},
	} {
		got, note := emulatedVersion(c.cluster, c.binary)
		if got != c.want || (c.note == "") != (note == "") || !strings.Contains(note, c.note) {
			t.Errorf("emulatedVersion(%s, %s) = %q, %q; want %q, %q", c.cluster, c.binary, got, note, c.want, c.note)
		}
	}
}

func TestCIDRAllocatorSkipsUsed(t *testing.T) {
	t.Parallel()

	a := newCIDRAllocator([]string{"10.244.0.0/16"}, []obj{
		{"spec": map[string]any{"podCIDR": "10.244.0.0/24"}},
		{"spec": map[string]any{"podCIDR": "10.244.2.0/24"}},
	})

	for _, want := range []string{"10.244.1.0/24", "10.244.3.0/24", "10.244.4.0/24"} {
		if got := a.next(); got != want {
			t.Fatalf("next = %s, want %s", got, want)
		}
	}

	if got := newCIDRAllocator([]string{"fd00::/64"}, nil).next(); got != "" {
		t.Fatalf("IPv6 pod CIDR: %q (the lab allocates IPv4 /24s only)", got)
	}
}

func TestTalosNodeSpecRemovesOnlyItsOwn(t *testing.T) {
	t.Parallel()

	node := obj{"metadata": map[string]any{"labels": map[string]any{"user": "x", "old": "1"}, "annotations": map[string]any{"talos.dev/owned-labels": `["old"]`}}, "spec": map[string]any{}}
	v := kubeletView{live: true, cfgLabels: map[string]string{"new": "2"}, cfgTaints: []kubeTaint{{Key: "k", Effect: "NoSchedule"}}}

	if !talosNodeSpec(node, v, nil) {
		t.Fatal("no change")
	}

	labels := field(node, "metadata", "labels").(map[string]any)
	if labels["user"] != "x" || labels["old"] != nil || labels["new"] != "2" {
		t.Fatalf("labels %v", labels)
	}

	if fieldString(node, "metadata", "annotations", "talos.dev/owned-labels") != `["new"]` || len(taintsOf(fieldMap(node, "spec"))) != 1 {
		t.Fatalf("node %v", node)
	}

	if talosNodeSpec(node, v, nil) {
		t.Fatal("a second pass changed the node again")
	}
}
