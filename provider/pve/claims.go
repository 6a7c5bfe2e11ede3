package pve

import "sync"

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

// Release forgets the claim of resource name: its VM runs (and Proxmox
// counts it) or will not be created.
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
		if n != name && c.node == node {
			othersMiB += c.mib
			others++
		}
	}
	return othersMiB, others
}
