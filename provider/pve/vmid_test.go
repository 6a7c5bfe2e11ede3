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
			// as createNew does: an id in use is refused by the create,
			// reported, and another one allocated
			for attempt := 1; ; attempt++ {
				id, release, err := a.Allocate(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				// the create takes a while; meanwhile nextid still says id is free
				time.Sleep(2 * time.Millisecond)
				created := src.create(id)
				release()
				if created {
					ids <- id
					return
				}
				a.Taken(id)
				if attempt == 2 {
					t.Errorf("VMID %d refused on the second attempt: an id in use or one handed out twice", id)
					return
				}
			}
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

// Only the first allocation asks Proxmox; the next ones take the id after
// the last one handed out, and the create is what checks it. An id another
// client took meanwhile is refused by the create (Taken): the allocation
// after that asks Proxmox again and skips what this process holds and what
// is in use.
func TestAllocateSkipsIDsTakenOutsideTheProcess(t *testing.T) {
	t.Parallel()
	src := &fakeIDs{used: map[int]bool{}}
	a := NewIDAllocator(src)
	id1, rel1, err := a.Allocate(context.Background())
	if err != nil || id1 != 100 || src.calls != 1 {
		t.Fatalf("first allocation = %d, %v after %d requests; want 100 after 1", id1, err, src.calls)
	}
	// another client creates 101 meanwhile; 100 is still being created by us
	src.create(101)
	id2, rel2, err := a.Allocate(context.Background())
	if err != nil || id2 != 101 || src.calls != 1 {
		t.Fatalf("second allocation = %d, %v after %d requests; want 101 without asking", id2, err, src.calls)
	}
	if src.create(id2) {
		t.Fatal("the fake let 101 be created twice")
	}
	rel2()
	a.Taken(id2)
	id3, rel3, err := a.Allocate(context.Background())
	if err != nil || id3 != 102 {
		t.Fatalf("allocation after 101 was refused = %d, %v; want 102 (100 held, 101 taken)", id3, err)
	}
	// our create of 100 failed: released twice is harmless, and the next
	// id comes after the last one handed out
	rel1()
	rel1()
	calls := src.calls
	id4, rel4, err := a.Allocate(context.Background())
	if err != nil || id4 != 103 || src.calls != calls {
		t.Fatalf("allocation after a release = %d, %v after %d more requests; want 103 without asking", id4, err, src.calls-calls)
	}
	rel3()
	rel4()
}

// A run that creates many VMs one after another asks Proxmox once.
func TestAllocateAsksOncePerProcess(t *testing.T) {
	t.Parallel()
	src := &fakeIDs{used: map[int]bool{100: true, 101: true}}
	a := NewIDAllocator(src)
	for want := 102; want < 112; want++ {
		id, release, err := a.Allocate(context.Background())
		if err != nil || id != want || !src.create(id) {
			t.Fatalf("allocation = %d, %v; want %d, free", id, err, want)
		}
		release()
	}
	if src.calls != 1 {
		t.Fatalf("10 allocations sent %d requests, want 1", src.calls)
	}
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
