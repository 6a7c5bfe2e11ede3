package pve

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
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
	mu      sync.Mutex
	entries map[string]*discoveryEntry
	// memoryChanges counts this client's writes that change a node's memory
	// in use.
	memoryChanges atomic.Int64
}

type discoveryEntry struct {
	// mu is held while the entry is read from Proxmox.
	mu    sync.Mutex
	ok    bool
	gen   int64 // memoryChanges when the read started
	value any
}

func (d *discovery) entry(key string) *discoveryEntry {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.entries == nil {
		d.entries = map[string]*discoveryEntry{}
	}
	e := d.entries[key]
	if e == nil {
		e = &discoveryEntry{}
		d.entries[key] = e
	}
	return e
}

// memoryChanged voids the answers that show the nodes' memory in use.
func (d *discovery) memoryChanged() { d.memoryChanges.Add(1) }

// cachedRead answers key from the cache, or reads it. showsMemory: the
// answer shows memory in use, so that a memory change voids it.
func cachedRead[T any](ctx context.Context, d *discovery, key string, showsMemory bool,
	read func(context.Context) ([]T, error)) ([]T, error) {
	e := d.entry(key)
	e.mu.Lock()
	defer e.mu.Unlock()
	gen := d.memoryChanges.Load()
	if e.ok && (!showsMemory || e.gen == gen) {
		return slices.Clone(e.value.([]T)), nil
	}
	v, err := read(ctx)
	if err != nil {
		return nil, err
	}
	e.ok, e.gen, e.value = true, gen, v
	return slices.Clone(v), nil
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
