package pve

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestMemoryClaims(t *testing.T) {
	t.Parallel()
	m := NewMemoryClaims()
	if sum, n := m.Claim("pve1", "cp1", 4096); sum != 0 || n != 0 {
		t.Fatalf("first claim sees %d MiB of %d others", sum, n)
	}
	m.Claim("pve1", "cp2", 2048)
	m.Claim("pve2", "cp3", 8192)
	if sum, n := m.Claim("pve1", "cp1", 4096); sum != 2048 || n != 1 {
		t.Errorf("cp1 again sees %d MiB of %d others, want cp2's 2048 MiB only", sum, n)
	}
	// a resource that claims again replaces its claim, and may move
	m.Claim("pve2", "cp2", 1024)
	if sum, n := m.Claimed("pve1", "x"); sum != 4096 || n != 1 {
		t.Errorf("pve1 holds %d MiB of %d claims, want 4096 of 1", sum, n)
	}
	m.Release("cp1")
	if sum, n := m.Claimed("pve1", "x"); sum != 0 || n != 0 {
		t.Errorf("after release pve1 holds %d MiB of %d claims", sum, n)
	}
}

func TestMemoryClaimsConcurrent(t *testing.T) {
	t.Parallel()
	m := NewMemoryClaims()
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.Claim("pve1", fmt.Sprintf("vm%d", i), 100)
		}()
	}
	wg.Wait()
	if sum, n := m.Claimed("pve1", ""); sum != 5000 || n != 50 {
		t.Fatalf("got %d MiB of %d claims", sum, n)
	}
}

// A started VM's claim no longer counts as one to be created (Claimed), and
// counts for node lists read before its start (StartedSince).
func TestMemoryClaimsStarted(t *testing.T) {
	t.Parallel()
	m := NewMemoryClaims()
	m.Claim("pve1", "cp1", 4096)
	m.Claim("pve1", "cp2", 2048)
	before := time.Now().Add(-time.Second)
	if !m.Has("cp1") || m.Has("nobody") {
		t.Fatal("Has: cp1 claims, nobody does not")
	}
	m.Started("cp1")
	if m.Has("cp1") {
		t.Error("a started VM still claims as one to be created")
	}
	if sum, n := m.Claimed("pve1", "x"); sum != 2048 || n != 1 {
		t.Errorf("pve1 holds %d MiB of %d claims to be created, want cp2's 2048 of 1", sum, n)
	}
	if got := m.StartedSince("pve1", "x", before); got != 4096 {
		t.Errorf("started since before: %d MiB, want cp1's 4096", got)
	}
	if got := m.StartedSince("pve1", "cp1", before); got != 0 {
		t.Errorf("cp1's own start counted for it: %d MiB", got)
	}
	if got := m.StartedSince("pve1", "x", time.Now().Add(time.Second)); got != 0 {
		t.Errorf("a list read after the start still misses %d MiB", got)
	}
}
