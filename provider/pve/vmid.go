package pve

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// IDSource answers which VMIDs Proxmox considers free.
type IDSource interface {
	// NextFree is the lowest free VMID (GET /cluster/nextid).
	NextFree(ctx context.Context) (int, error)
	// IsFree asks whether one VMID is free (GET /cluster/nextid?vmid=N).
	IsFree(ctx context.Context, id int) (bool, error)
}

// IDAllocator hands out VMIDs so that concurrent creates in one provider
// process never race for the same id. Proxmox has no reservation: nextid is
// only true at the moment it answers, and the id stays free until a create
// call for it arrives. So allocation is serialized here, every id handed out
// is held until its create has finished (by then Proxmox knows the VM), and a
// create that still hits "already exists" (another client won the race)
// releases its id, reports it (Taken) and allocates again.
// bpg/terraform-provider-proxmox (proxmox/cluster/id_generator.go) learned
// the same lesson with a file lock.
//
// Only the first allocation of a process asks Proxmox (GET /cluster/nextid);
// the next ones take the id after the last one handed out. Asking about
// that id (nextid?vmid=N) would be a check the create makes anyway, at the
// moment that counts: Proxmox refuses a create or clone of an id in use
// ("VM N already exists", qemu-server create_vm and clone_vm through
// PVE::Cluster::check_vmid_unused) before it starts anything. After such a
// refusal the next allocation asks Proxmox again.
type IDAllocator struct {
	src      IDSource
	mu       sync.Mutex
	reserved map[int]bool
	// claims maps explicit VMIDs to the resource that asked for them.
	claims map[int]string
	// next is the id after the last one handed out (0: ask Proxmox).
	next int
}

// NewIDAllocator allocates from src.
func NewIDAllocator(src IDSource) *IDAllocator {
	return &IDAllocator{src: src, reserved: map[int]bool{}, claims: map[int]string{}}
}

// Claim records that resource name asks for the explicit VMID id. It fails
// when another resource of the same program claimed it first, so that such a
// conflict is a preview error rather than a failed create.
func (a *IDAllocator) Claim(id int, name string) (otherName string, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if other, taken := a.claims[id]; taken && other != name {
		return other, false
	}
	a.claims[id] = name
	return "", true
}

// maxProbe bounds how far past nextid the allocator walks.
const maxProbe = 1000

// Allocate returns a VMID that Proxmox reports free and that no other create
// in this process holds. Call release once the create has finished, whether
// it succeeded or not.
func (a *IDAllocator) Allocate(ctx context.Context) (id int, release func(), err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next > 0 {
		id = a.next
		for a.reserved[id] {
			id++
		}
		a.reserved[id] = true
		a.next = id + 1
		return id, a.releaser(id), nil
	}
	first, err := a.src.NextFree(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("asking Proxmox for a free VMID: %w", err)
	}
	for id = first; id < first+maxProbe; id++ {
		if a.reserved[id] {
			continue
		}
		if id != first {
			free, err := a.src.IsFree(ctx, id)
			if err != nil {
				return 0, nil, fmt.Errorf("checking whether VMID %d is free: %w", id, err)
			}
			if !free {
				continue
			}
		}
		a.reserved[id] = true
		a.next = id + 1
		return id, a.releaser(id), nil
	}
	return 0, nil, fmt.Errorf("no free VMID between %d and %d: delete unused VMs or set `vmId` explicitly", first, first+maxProbe-1)
}

// Taken reports that Proxmox refused a create of id, which Allocate handed
// out, because the id is in use: the next allocation asks Proxmox.
func (a *IDAllocator) Taken(id int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.next = 0
}

// Reserve holds an explicit VMID for the duration of its create, so that
// Allocate never hands it out meanwhile and two resources in one program
// cannot create it at once.
func (a *IDAllocator) Reserve(id int) (release func(), err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.reserved[id] {
		return nil, fmt.Errorf("VMID %d is being created by another resource of this program: "+
			"give each VM its own `vmId`, or leave `vmId` unset to allocate one", id)
	}
	a.reserved[id] = true
	return a.releaser(id), nil
}

// Held reports whether a create or clone of this process holds id now
// (Allocate or Reserve, not yet released): its VM may show before the
// create call has answered.
func (a *IDAllocator) Held(id int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reserved[id]
}

func (a *IDAllocator) releaser(id int) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			delete(a.reserved, id)
			a.mu.Unlock()
		})
	}
}

// IDs is the client's VMID allocator (one per provider process).
func (c *Client) IDs() *IDAllocator { return c.ids }

// MemoryClaims is the memory the VMs being created by this provider process
// will take, per node.
func (c *Client) MemoryClaims() *MemoryClaims { return c.memory }

// clusterIDs asks the cluster API.
type clusterIDs struct{ c *Client }

func (s clusterIDs) NextFree(ctx context.Context) (int, error) {
	var raw json.RawMessage
	err := DefaultRetry.Retry(ctx, "asking for a free VMID", true, func(ctx context.Context) error {
		// raw: Cluster.NextID needs Client.Cluster first (GET /cluster/status),
		// and its StringOrInt reads an empty or null answer as VMID 0
		return s.c.get(ctx, "/cluster/nextid", &raw)
	})
	if err != nil {
		return 0, err
	}
	return parseIntish(raw)
}

func (s clusterIDs) IsFree(ctx context.Context, id int) (bool, error) {
	var raw json.RawMessage
	err := DefaultRetry.Retry(ctx, fmt.Sprintf("asking whether VMID %d is free", id), true, func(ctx context.Context) error {
		// raw: go-proxmox has no check of a given VMID (Cluster.NextID takes none)
		return s.c.get(ctx, fmt.Sprintf("/cluster/nextid?vmid=%d", id), &raw)
	})
	if err == nil {
		return true, nil
	}
	// pve-manager PVE/API2/Cluster.pm nextid: a taken id is a parameter
	// error (HTTP 400) "VM <id> already exists".
	if IsAlreadyExists(err) {
		return false, nil
	}
	return false, err
}

// parseIntish reads an integer Proxmox may send as a JSON number or string.
func parseIntish(raw json.RawMessage) (int, error) {
	s := strings.Trim(strings.TrimSpace(string(raw)), `"`)
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("Proxmox answered %s where a number was expected", string(raw))
	}
	return n, nil
}
