package pve

import (
	"sync"
	"time"
)

// MemoryClaims records the memory that VMs about to be created in this
// provider process will take on each node. Proxmox counts a VM's memory
// only once it runs, so a program that creates several VMs on one node
// would otherwise see the same free memory for each of them.
type MemoryClaims struct {
	mu sync.Mutex
	// byName maps a resource name to its claim.
	byName map[string]memoryClaim
}

type memoryClaim struct {
	node string
	mib  int
	// started: the VM was created and started at this time (Started);
	// zero while it is to be created.
	started time.Time
}

// NewMemoryClaims returns an empty record.
func NewMemoryClaims() *MemoryClaims { return &MemoryClaims{byName: map[string]memoryClaim{}} }

// Claim records that resource name will take mib MiB on node (replacing its
// earlier claim) and returns what the other resources claim on that node:
// their sum and how many they are.
func (m *MemoryClaims) Claim(node, name string, mib int) (othersMiB, others int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.byName[name] = memoryClaim{node: node, mib: mib}
	return m.othersOn(node, name)
}

// Has says whether resource name claims memory, to be created.
func (m *MemoryClaims) Has(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.byName[name]
	return ok && c.started.IsZero()
}

// Started says that resource name's VM was created and started now: a
// node list read before now does not count its memory, so the claim is
// kept for StartedSince (and no longer counted by Claim and Claimed).
func (m *MemoryClaims) Started(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.byName[name]; ok {
		c.started = time.Now()
		m.byName[name] = c
	}
}

// StartedSince is what the VMs other than name that were started after t
// (Started) take on node: what a node list read at t does not count.
func (m *MemoryClaims) StartedSince(node, name string, t time.Time) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	sum := 0
	for n, c := range m.byName {
		if n != name && c.node == node && !c.started.IsZero() && c.started.After(t) {
			sum += c.mib
		}
	}
	return sum
}

// ReleasePending forgets the claim of resource name unless its VM was
// started (a create that ended without starting it).
func (m *MemoryClaims) ReleasePending(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.byName[name]; ok && c.started.IsZero() {
		delete(m.byName, name)
	}
}

// Release forgets the claim of resource name: its VM will not be created,
// or it is an existing VM's.
func (m *MemoryClaims) Release(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byName, name)
}

// Claimed is what the resources other than name claim on node.
func (m *MemoryClaims) Claimed(node, name string) (othersMiB, others int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.othersOn(node, name)
}

// othersOn sums the claims on node of the resources other than name; m.mu
// is held.
func (m *MemoryClaims) othersOn(node, name string) (othersMiB, others int) {
	for n, c := range m.byName {
		if n != name && c.node == node && c.started.IsZero() {
			othersMiB += c.mib
			others++
		}
	}
	return othersMiB, others
}
