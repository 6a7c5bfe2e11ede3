package pve

import (
	"slices"
	"testing"
)

func TestIdentityMarkers(t *testing.T) {
	id := "0123456789abcdef0123"
	if CreatingTag(id) != "ptnew-0123456789abcdef0123" || !IsSystemTag(CreatingTag(id)) || !IsSystemTag(OwnerTag(id, 104)) {
		t.Fatal("tags")
	}
	if OwnerTag(id, 104) == OwnerTag(id, 105) || OwnerTag(id, 104) == OwnerTag("f"+id[1:], 104) {
		t.Fatal("the owner tag must bind the identity to the VMID")
	}
	tags := []string{"talos", CreatingTag(id), "cluster-demo", OwnerTag("x", 9)}
	if got := UserTags(tags); !slices.Equal(got, []string{"talos", "cluster-demo"}) {
		t.Fatalf("UserTags %v", got)
	}
	if !IsCreating(tags) || IsCreating(UserTags(tags)) {
		t.Fatal("IsCreating")
	}
	for _, desc := range []string{"", "golden image", "two\nlines\n"} {
		marked := WithCreatingLine(desc, id)
		if !HasCreatingLine(marked, id) || HasCreatingLine(marked, "other") {
			t.Fatalf("%q: marked %q", desc, marked)
		}
		if back := WithoutCreatingLine(marked); back != trimNL(desc) {
			t.Fatalf("%q: back %q", desc, back)
		}
	}
	if DownloadURL("https://x/a.iso", id) != "https://x/a.iso#proxmoxtalos=ptnew-"+id ||
		DownloadURL("https://x/a.iso#frag", id) != "https://x/a.iso#frag" || DownloadURL("https://x/a.iso", "") != "https://x/a.iso" {
		t.Fatal("DownloadURL")
	}
}

func trimNL(s string) string {
	for len(s) > 0 && s[len(s)-1] == '\n' {
		s = s[:len(s)-1]
	}
	return s
}
