// Package memo keeps the results of pure functions of large texts (machine
// configurations) for the life of the provider process, keyed by a SHA-256 of
// their arguments.
//
// One preview asks the same questions of the same configuration many times:
// the component generates and validates it, the ConfigurationApply's Check
// validates it again and reads its install image, Diff reads the image and
// its digest, the summary and the running-config reads parse it once more.
// Each answer depends on the text alone, so it is computed once (issue 14:
// a 60-node no-op preview parsed its configurations about ten times each).
// Keys are hashes, so a cache holds no configuration text; values hold only
// what the functions return.
package memo

import (
	"crypto/sha256"
	"encoding/binary"
	"sync"
)

// Key identifies the arguments of one call.
type Key [sha256.Size]byte

// KeyOf hashes the arguments, each with its length, so that ("ab", "c") and
// ("a", "bc") differ.
func KeyOf(parts ...string) Key {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	var k Key
	h.Sum(k[:0])
	return k
}

// Cache maps keys to values, up to Max entries (default 4096); when full it
// starts over, which costs only recomputation.
type Cache[V any] struct {
	Max int

	mu sync.Mutex
	m  map[Key]V
}

// Get returns the value kept for k.
func (c *Cache[V]) Get(k Key) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

// Put keeps v for k.
func (c *Cache[V]) Put(k Key, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	limit := c.Max
	if limit <= 0 {
		limit = 4096
	}
	if c.m == nil || len(c.m) >= limit {
		c.m = map[Key]V{}
	}
	c.m[k] = v
}

// Do returns the value kept for k, or computes, keeps and returns it.
// Concurrent callers of a missing key may each compute it (the functions
// are pure: the answers are the same).
func (c *Cache[V]) Do(k Key, compute func() V) V {
	if v, ok := c.Get(k); ok {
		return v
	}
	v := compute()
	c.Put(k, v)
	return v
}

// Range calls f for each kept entry, holding the cache's lock (f must not
// call the cache).
func (c *Cache[V]) Range(f func(Key, V)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range c.m {
		f(k, v)
	}
}
