package pve

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"
)

// volumeLists keeps the last content list this client read of each storage
// on each node, for lookups that only advise: a VirtualMachine's Check
// asking whether the ISO or disk image it names exists, which in a new
// cluster's `up` comes right after the DownloadFile that made the file
// read the same list. Proxmox refuses a create that names a missing
// volume on its own ("volume ... does not exist"), so a recent answer can
// at worst move that error from the preview to the create.
//
// Every read that guards a write (DownloadFile's create, a volume delete,
// the read after a download) asks Proxmox afresh and never uses a kept
// list: a list read before another client's change must not decide what
// is deleted, downloaded or recorded.
//
// A kept list is good for maxAge (counted from the start of its read) and
// until this client writes to that storage: a download or a volume delete
// (any call under /nodes/{node}/storage/{storage}/) voids the storage's
// list on that node, and on every node where the storage is shared (the
// same content everywhere), when the call is sent, when it is answered and
// when its task ends. Only volumes that storage calls alone make or remove are answered
// from a kept list (iso, import, vztmpl, snippets: see staticContent);
// VM disks change with VM calls, which do not void it.
type volumeLists struct {
	mu      sync.Mutex
	lists   map[string]volumeList // by node + "/" + storage
	changes map[string]int64      // this client's writes, by node + "/" + storage and by "*/" + storage
	flights map[string]*sync.Mutex
}

type volumeList struct {
	at   time.Time
	gen  listGen
	vols []Volume
}

// listGen counts this client's writes to a storage on one node (node) and
// on any node (anywhere).
type listGen struct{ node, anywhere int64 }

func listKey(node, storage string) string { return node + "/" + storage }

func anywhereKey(storage string) string { return "*/" + storage }

// gen counts this client's writes to storage so far.
func (l *volumeLists) gen(node, storage string) listGen {
	l.mu.Lock()
	defer l.mu.Unlock()
	return listGen{l.changes[listKey(node, storage)], l.changes[anywhereKey(storage)]}
}

// changed voids the kept list of storage on node, and on every node where
// the storage is shared.
func (l *volumeLists) changed(node, storage string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.changes == nil {
		l.changes = map[string]int64{}
	}
	l.changes[listKey(node, storage)]++
	l.changes[anywhereKey(storage)]++
}

// keep records a list read from Proxmox that started at at, with gen the
// storage's write counts then; an older read does not replace a newer one.
func (l *volumeLists) keep(node, storage string, at time.Time, gen listGen, vols []Volume) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lists == nil {
		l.lists = map[string]volumeList{}
	}
	k := listKey(node, storage)
	if old, ok := l.lists[k]; ok && old.at.After(at) {
		return
	}
	l.lists[k] = volumeList{at: at, gen: gen, vols: slices.Clone(vols)}
}

// recent is the kept list if it is younger than maxAge and no write of
// this client to the storage (on node, or anywhere when it is shared) came
// after its read started.
func (l *volumeLists) recent(node, storage string, shared bool, maxAge time.Duration) ([]Volume, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	got, ok := l.lists[listKey(node, storage)]
	if !ok || got.gen.node != l.changes[listKey(node, storage)] || time.Since(got.at) > maxAge ||
		(shared && got.gen.anywhere != l.changes[anywhereKey(storage)]) {
		return nil, false
	}
	return got.vols, true
}

// flight is held while one recent-asker reads the list, so that the Checks
// of many VMs on one node share a read.
func (l *volumeLists) flight(node, storage string) *sync.Mutex {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.flights == nil {
		l.flights = map[string]*sync.Mutex{}
	}
	k := listKey(node, storage)
	if l.flights[k] == nil {
		l.flights[k] = &sync.Mutex{}
	}
	return l.flights[k]
}

// storageWrite is the node and storage a write to path changes ("" for
// none): the calls under /nodes/{node}/storage/{storage}/ (download-url, a
// content delete or upload).
func storageWrite(path string) (node, storage string) {
	rest, ok := strings.CutPrefix(path, "/nodes/")
	if !ok {
		return "", ""
	}
	node, rest, _ = strings.Cut(rest, "/")
	rest, ok = strings.CutPrefix(rest, "storage/")
	if !ok {
		return "", ""
	}
	storage, sub, ok := strings.Cut(rest, "/")
	if !ok || sub == "" || node == "" {
		return "", ""
	}
	return node, storage
}

// staticContent reports a volume that only storage calls make or remove:
// <storage>:iso/..., import/..., vztmpl/..., snippets/... (pve-storage
// names these by their content directory); VM disks are named by VM.
func staticContent(volid string) bool {
	_, rest, ok := strings.Cut(volid, ":")
	if !ok {
		return false
	}
	dir, file, ok := strings.Cut(rest, "/")
	return ok && file != "" && (dir == "iso" || dir == "import" || dir == "vztmpl" || dir == "snippets")
}

// RecentVolumeMaxAge is how old a content list FindRecentVolume answers
// from may be: the lookups of one step of a run (a file's download and the
// Checks of the VMs that name it, or the Checks of one preview).
const RecentVolumeMaxAge = 3 * time.Second

// FindRecentVolume is FindVolume for a lookup that only advises (a Check):
// it answers from the storage's content list this client read at most
// maxAge ago, when no write of this client to that storage came since,
// and reads it otherwise. A volume other than an ISO, import image,
// container template or snippet is always read afresh. Never use it to
// decide a write: use FindVolume.
func (c *Client) FindRecentVolume(ctx context.Context, node, storage, volid string, maxAge time.Duration) (Volume, bool, error) {
	if !staticContent(volid) {
		return c.FindVolume(ctx, node, storage, volid)
	}
	// whether another node's write shows here (read once per process)
	info, found, err := c.StorageOn(ctx, node, storage)
	if err != nil {
		return c.FindVolume(ctx, node, storage, volid)
	}
	shared := !found || info.Shared // unknown: as if it were
	fl := c.vols.flight(node, storage)
	fl.Lock()
	defer fl.Unlock()
	if vols, ok := c.vols.recent(node, storage, shared, maxAge); ok {
		return findVolume(vols, volid, nil)
	}
	return c.FindVolume(ctx, node, storage, volid)
}
