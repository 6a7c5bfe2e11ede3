package pve

import (
	"context"
	"sync"
	"testing"
	"time"
)

// fakeIDs behaves like /cluster/nextid over a set of existing VMIDs.
type fakeIDs struct {
	mu    sync.Mutex
	used  map[int]bool
	calls int
}

func (f *fakeIDs) NextFree(context.Context) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	for id := 100; ; id++ {
		if !f.used[id] {
			return id, nil
		}
	}
}

func (f *fakeIDs) IsFree(_ context.Context, id int) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return !f.used[id], nil
}

// create marks an id used, failing like Proxmox when it already is.
func (f *fakeIDs) create(id int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.used[id] {
		return false
	}
	f.used[id] = true
	return true
}

func TestAllocateConcurrentCreatesGetDistinctIDs(t *testing.T) {
	t.Parallel()
	src := &fakeIDs{used: map[int]bool{100: true, 102: true}}
	a := NewIDAllocator(src)
	const n = 40
	ids := make(chan int, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, release, err := a.Allocate(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			// the create takes a while; meanwhile nextid still says id is free
			time.Sleep(2 * time.Millisecond)
			if !src.create(id) {
				t.Errorf("VMID %d was handed out twice", id)
			}
			release()
			ids <- id
		}()
	}
	wg.Wait()
	close(ids)
	seen := map[int]bool{}
	for id := range ids {
		if seen[id] || id == 100 || id == 102 {
			t.Errorf("VMID %d allocated twice or already in use", id)
		}
		seen[id] = true
	}
	if len(seen) != n {
		t.Fatalf("got %d distinct ids, want %d", len(seen), n)
	}
}

func TestAllocateSkipsIDsTakenOutsideTheProcess(t *testing.T) {
	t.Parallel()
	src := &fakeIDs{used: map[int]bool{}}
	a := NewIDAllocator(src)
	id1, rel1, err := a.Allocate(context.Background())
	if err != nil || id1 != 100 {
		t.Fatalf("first allocation = %d, %v; want 100", id1, err)
	}
	// another client creates 101 meanwhile; 100 is still being created by us
	src.create(101)
	id2, rel2, err := a.Allocate(context.Background())
	if err != nil || id2 != 102 {
		t.Fatalf("second allocation = %d, %v; want 102 (100 held, 101 taken)", id2, err)
	}
	// our create of 100 failed: the id becomes available again
	rel1()
	rel1() // releasing twice is harmless
	id3, rel3, err := a.Allocate(context.Background())
	if err != nil || id3 != 100 {
		t.Fatalf("after release = %d, %v; want 100", id3, err)
	}
	rel2()
	rel3()
}

func TestReserveExplicitID(t *testing.T) {
	t.Parallel()
	src := &fakeIDs{used: map[int]bool{}}
	a := NewIDAllocator(src)
	release, err := a.Reserve(100)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Reserve(100); err == nil {
		t.Fatal("a second Reserve of the same id succeeded")
	}
	id, rel, err := a.Allocate(context.Background())
	if err != nil || id != 101 {
		t.Fatalf("Allocate while 100 is reserved = %d, %v; want 101", id, err)
	}
	rel()
	release()
	if _, err := a.Reserve(100); err != nil {
		t.Fatalf("Reserve after release: %v", err)
	}
}

func TestClaimExplicitID(t *testing.T) {
	t.Parallel()
	a := NewIDAllocator(&fakeIDs{used: map[int]bool{}})
	if _, ok := a.Claim(150, "cp1"); !ok {
		t.Fatal("first claim refused")
	}
	if _, ok := a.Claim(150, "cp1"); !ok {
		t.Fatal("the same resource checked again must keep its claim")
	}
	if other, ok := a.Claim(150, "cp2"); ok || other != "cp1" {
		t.Fatalf("second resource claimed 150: ok=%v other=%q", ok, other)
	}
}
