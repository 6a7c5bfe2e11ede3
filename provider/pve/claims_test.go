package pve

import (
	"fmt"
	"sync"
	"testing"
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
