package pve

import (
	"testing"
	"time"
)

// A write to a storage voids its list on that node, and on the other nodes
// only where the storage is shared (the same content everywhere).
func TestVolumeListsVoidedByWrites(t *testing.T) {
	t.Parallel()
	var l volumeLists
	vols := []Volume{{VolID: "s:iso/a.iso"}}
	for _, node := range []string{"pve1", "pve2"} {
		l.keep(node, "s", time.Now(), l.gen(node, "s"), vols)
	}
	l.changed("pve2", "s")
	if _, ok := l.recent("pve1", "s", false, time.Hour); !ok {
		t.Error("a write on pve2 voided pve1's list of a storage that is not shared")
	}
	if _, ok := l.recent("pve1", "s", true, time.Hour); ok {
		t.Error("a write on pve2 left pve1's list of a shared storage")
	}
	if _, ok := l.recent("pve2", "s", false, time.Hour); ok {
		t.Error("a write on pve2 left pve2's list")
	}
	// a read that started before a write is old, even if it ends after it
	at, gen := time.Now(), l.gen("pve2", "s")
	l.changed("pve2", "s")
	l.keep("pve2", "s", at, gen, vols)
	if _, ok := l.recent("pve2", "s", false, time.Hour); ok {
		t.Error("a list read across a write was kept as good")
	}
	if _, ok := l.recent("pve1", "s", false, 0); ok {
		t.Error("maxAge 0 answered from a kept list")
	}
}

func TestStorageWriteAndStaticContent(t *testing.T) {
	t.Parallel()
	for path, want := range map[string][2]string{
		"/nodes/pve1/storage/local/download-url":                {"pve1", "local"},
		"/nodes/pve1/storage/local/content/local%3Aiso%2Fa.iso": {"pve1", "local"},
		"/nodes/pve1/storage/local":                             {"", ""},
		"/nodes/pve1/qemu/100/config":                           {"", ""},
		"/cluster/resources":                                    {"", ""},
	} {
		if n, s := storageWrite(path); n != want[0] || s != want[1] {
			t.Errorf("storageWrite(%q) = %q, %q; want %q", path, n, s, want)
		}
	}
	for volid, want := range map[string]bool{
		"local:iso/a.iso": true, "local:import/a.qcow2": true, "local:vztmpl/a.tar.zst": true,
		"local-lvm:vm-100-disk-0": false, "local:100/vm-100-disk-0.qcow2": false, "local:iso/": false, "a.iso": false,
	} {
		if got := staticContent(volid); got != want {
			t.Errorf("staticContent(%q) = %v", volid, got)
		}
	}
}
