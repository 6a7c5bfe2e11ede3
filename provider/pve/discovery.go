package pve

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// discovery keeps, for the life of the provider process (one Pulumi
// operation), what the reads that describe the cluster rather than one VM
// answered: the node list, and each node's storages and bridges. Every
// VM's and every download's Check asks them, and so does the cluster's
// plan; Proxmox answers the same each time unless something changed them.
//
// Of the writes this client makes, only those that change what a VM takes
// from its node's memory (power actions, a memory change) change one of
// these answers: a node's memory in use, which the plan's placement and the
// preview's memory warning read. They void the node list. Storages (their
// content types, whether they are active; the free space is not used) and
// bridges change only by an administrator's hand; a Pulumi operation is
// not expected to race one, and a new operation (a new process) sees it.
//
// Concurrent askers of one answer wait for a single read. Only answers are
// kept: a failed read is asked again by the next caller.
type discovery struct {
	reads readCache
	// memoryChanges counts this client's writes that change a node's memory
	// in use; claimedChanges those of them that start a VM whose memory
	// MemoryClaims counts (WithClaimedStart); the node list's cache entry
	// keeps its value from when the list was read (aux, CheckNodes).
	memoryChanges  atomic.Int64
	claimedChanges atomic.Int64
}

// memoryChanged voids the answers that show the nodes' memory in use;
// claimed: the change is covered by a memory claim (WithClaimedStart).
func (d *discovery) memoryChanged(claimed bool) {
	if claimed {
		d.claimedChanges.Add(1)
	}
	d.memoryChanges.Add(1)
}

type claimedStartKey struct{}

// WithClaimedStart marks the power actions under ctx as those of resource
// name's VM, which this process creates and whose memory MemoryClaims
// claims: a start that succeeds marks the claim started
// (MemoryClaims.Started), and its change of the nodes' memory in use is
// covered by the claim, so a Check may keep the node list (CheckNodes).
func WithClaimedStart(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, claimedStartKey{}, name)
}

// claimedStart is the resource name WithClaimedStart gave ctx, or "".
func claimedStart(ctx context.Context) string {
	name, _ := ctx.Value(claimedStartKey{}).(string)
	return name
}

// noChanges is the generation of answers that no write of this client voids.
func noChanges() int64 { return 0 }

// readCache keeps answers by key. An answer is good while the generation
// it was read at is current (gen: a count of the writes that void it) and,
// with a maxAge, while it is younger than that (counted from the start of
// its read). Concurrent askers of one key wait for a single read; only
// answers are kept, a failed read is asked again by the next caller.
type readCache struct {
	mu      sync.Mutex
	entries map[string]*cacheEntry
}

type cacheEntry struct {
	// mu is held while the entry is read from Proxmox.
	mu  sync.Mutex
	ok  bool
	gen int64
	// aux is a second count read with gen, for the caller's own use (the
	// node list's: this client's claimed starts, CheckNodes).
	aux   int64
	at    time.Time
	value any
}

func (rc *readCache) entry(key string) *cacheEntry {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.entries == nil {
		rc.entries = map[string]*cacheEntry{}
	}
	e := rc.entries[key]
	if e == nil {
		e = &cacheEntry{}
		rc.entries[key] = e
	}
	return e
}

// cachedRead answers key from rc, or reads it. maxAge 0: no age limit.
func cachedRead[T any](ctx context.Context, rc *readCache, key string, gen func() int64, maxAge time.Duration,
	read func(context.Context) ([]T, error)) ([]T, error) {
	v, _, err := cachedReadAt(ctx, rc, key, gen, noChanges, maxAge, read)
	return v, err
}

// cachedReadAt is cachedRead that also says when the answer was read, and
// keeps aux() from the start of its read with it.
func cachedReadAt[T any](ctx context.Context, rc *readCache, key string, gen, aux func() int64, maxAge time.Duration,
	read func(context.Context) ([]T, error)) ([]T, time.Time, error) {
	e := rc.entry(key)
	e.mu.Lock()
	defer e.mu.Unlock()
	g := gen()
	if e.ok && e.gen == g && (maxAge == 0 || time.Since(e.at) <= maxAge) {
		return slices.Clone(e.value.([]T)), e.at, nil
	}
	at, x := time.Now(), aux()
	v, err := read(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	e.ok, e.gen, e.aux, e.at, e.value = true, g, x, at, v
	return slices.Clone(v), at, nil
}

// offer keeps value, read at at with generation gen by another request that
// gives the same answer, as key's answer, unless key is being read now or
// holds an answer read later.
func (rc *readCache) offer(key string, gen, aux int64, at time.Time, value any) {
	e := rc.entry(key)
	if !e.mu.TryLock() {
		return
	}
	defer e.mu.Unlock()
	if e.ok && e.at.After(at) {
		return
	}
	e.ok, e.gen, e.aux, e.at, e.value = true, gen, aux, at, value
}

// changesMemory reports whether a config write with these parameters can
// change what a VM takes from its node's memory (a running VM's memory or
// balloon, hot-plugged).
func changesMemory(params map[string]any, remove []string) bool {
	for _, k := range []string{"memory", "balloon"} {
		if _, ok := params[k]; ok || slices.Contains(remove, k) {
			return true
		}
	}
	return false
}
