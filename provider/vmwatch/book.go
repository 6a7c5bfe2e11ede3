package vmwatch

import (
	"sync"
	"time"
)

// Book is what the watchers of one process know about each VM's node
// between their operations (a Watcher lives for one operation, and one
// `pulumi up` runs many on the same nodes): when it last answered, since
// when it is silent, until when a silence the provider caused is expected,
// and when Proxmox may next be asked about its VM. Without it each new
// watcher started its own pace, and asked again what the last one had
// just been told.
type Book struct {
	mu  sync.Mutex
	vms map[int]*paced
}

type paced struct {
	// answered is the node's last answer (zero: none seen).
	answered time.Time
	// silentSince is its first failed attempt since then; zero: it answers.
	silentSince time.Time
	// quietUntil: the provider made it silent (Watcher.Silent) until then.
	quietUntil time.Time
	// next: no look before.
	next time.Time
	// looking: a look at this VM is under way (outside mu); the callers
	// that ask meanwhile are answered "not down" at once.
	looking bool
}

// NewBook returns an empty book.
func NewBook() *Book { return &Book{vms: map[int]*paced{}} }

// entry is VM vmid's record. Called with mu held.
func (b *Book) entry(vmid int) *paced {
	p := b.vms[vmid]
	if p == nil {
		p = &paced{}
		b.vms[vmid] = p
	}

	return p
}

// books holds one Book per key (the provider's Proxmox client: one per
// configured provider in the process).
var books sync.Map

// BookFor is the book shared by the watchers that look through key.
func BookFor(key any) *Book {
	if b, ok := books.Load(key); ok {
		return b.(*Book) //nolint:forcetypeassert // only Books are stored
	}

	b, _ := books.LoadOrStore(key, NewBook())

	return b.(*Book) //nolint:forcetypeassert // only Books are stored
}
