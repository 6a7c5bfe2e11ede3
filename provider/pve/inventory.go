package pve

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Inventory is what the cluster reports about its guests and nodes at one
// moment. It comes from one GET /cluster/resources, which the node the
// client talks to answers from the cluster's shared state (pve-manager
// PVE/API2/Cluster.pm resources): fast and complete even while another
// node is down, when that node's guests read status "unknown".
type Inventory struct {
	// At is when the read began (zero when not read through Client).
	At     time.Time
	Guests []ClusterVM
	// Offline holds the nodes that are not online.
	Offline map[string]bool
	// Uptime is how long each online node has run, where it says.
	Uptime map[string]time.Duration
	// Nodes are the cluster's nodes with the facts GET /nodes gives.
	Nodes []NodeInfo
	// Storages are, by node, the storages it reports "available" there
	// (see StorageOn).
	Storages map[string][]StorageInfo
}

// Guest finds the guest with VMID id.
func (inv Inventory) Guest(id int) (ClusterVM, bool) {
	for _, g := range inv.Guests {
		if g.VMID == id {
			return g, true
		}
	}
	return ClusterVM{}, false
}

// inventoryCache shares one read of the inventory between the operations
// of one provider process that ask within maxAge (the Diffs of a preview).
// Any change this client makes (a POST, PUT or DELETE) voids it.
type inventoryCache struct {
	// slot holds the one read in progress (a 1-slot channel, not a
	// sync.Mutex): a read retries under its caller's context, for minutes
	// while the Proxmox API is down, and a caller waiting for it must still
	// give up at its own context (a VM watcher's look is bounded).
	slot     chan struct{}
	slotOnce sync.Once
	at       time.Time
	gen      int64 // changes counted when it was read
	inv      Inventory
	changes  atomic.Int64
	// storages is inv.Storages of the last read, for StorageOn, which
	// must not wait for a read in progress
	smu      sync.Mutex
	storages map[string][]StorageInfo
}

// Inventory returns the cluster's inventory as read at most maxAge ago
// (counted from the start of the read), and after any change of this client.
func (c *Client) Inventory(ctx context.Context, maxAge time.Duration) (Inventory, error) {
	return c.inventory(ctx, maxAge, true, nil)
}

// OthersInventory is Inventory for a caller that looks only for what other
// clients made, such as the VMs an interrupted run left (their identity is
// no other resource's): this client's own changes do not void the read,
// so the creates of one run that start within maxAge of each other share
// one.
func (c *Client) OthersInventory(ctx context.Context, maxAge time.Duration) (Inventory, error) {
	return c.inventory(ctx, maxAge, false, nil)
}

// SettledInventory is OthersInventory for a caller that looks for guests
// by the identity tags another client's create gave them, such as the VMs
// an interrupted run left: a read of this process older than maxAge is
// reused too, when it shows no guest that another client was still
// creating or cloning (see Unsettled). Such a guest may carry the tags
// looked for once its task ends, so the inventory is read again; that
// helps only if the task has ended by then: a caller that must see the
// guest's tags waits for the task first (proxmox awaitForeignCreates).
//
// What a reused read cannot show is a guest whose create call Proxmox
// handled after it. From another process with the same identity that is
// a second run of the same stack at the same time (Pulumi's stack lock
// refuses it; a read at the caller's own start would not close that race
// either). From a killed run it is a create request Proxmox had received
// but not yet handled when the read was made: the provider's process ends
// some seconds after its CLI (provider/enginewatch needs three refused
// checks a second apart), and a request pvedaemon already holds is handled
// after its client is gone; with many creates queued for its few workers
// (3 by default) the last one may get its "lock: create" config (written
// before the call answers: qemu-server API2/Qemu.pm create_vm,
// create_and_lock_config) only then. The rerun's first read (its preview
// or plan, the earliest point of the run) is the one shared, so such a VM
// is missed and a second one made; a read at each create's own start
// narrows that window, it does not close it. Small in practice: the
// rerun's CLI and preview take longer than that queue, and the VM left
// over carries the creating tag and shows in `pulumi preview`
// (docs/resources.md "Interrupted runs").
func (c *Client) SettledInventory(ctx context.Context, maxAge time.Duration) (Inventory, error) {
	return c.inventory(ctx, maxAge, false, func(inv Inventory) bool { return len(c.Unsettled(inv)) == 0 })
}

// Unsettled lists the guests of inv that were being created or cloned
// (locked "create" or "clone") by another client than this process when
// inv was read: their tags and description come only when the task ends
// (create_vm writes the whole config at its end; clone_vm at the end of
// the copy). A VMID whose create or clone this process holds (IDs().Held:
// its call may not have answered yet) is this process's too, so that the
// parallel creates of one run do not wait for each other.
func (c *Client) Unsettled(inv Inventory) []ClusterVM {
	var out []ClusterVM
	for _, g := range inv.Guests {
		if g.Lock != "create" && g.Lock != "clone" {
			continue
		}
		if _, mine := c.made.Load(g.VMID); !mine && !c.IDs().Held(g.VMID) {
			out = append(out, g)
		}
	}
	return out
}

// forgetGone forgets the VMIDs this process made (see Unsettled) that inv,
// read from at on, no longer shows: someone else destroyed the VM, and a
// VM another client makes there later is not this process's. Only VMIDs
// whose create call was accepted before the read began: a read that began
// earlier may predate the VM.
func (c *Client) forgetGone(inv Inventory, at time.Time) {
	c.made.Range(func(k, v any) bool {
		vmid, _ := k.(int)
		if madeAt, _ := v.(time.Time); madeAt.Before(at) {
			if _, ok := inv.Guest(vmid); !ok {
				c.made.CompareAndDelete(k, v)
			}
		}
		return true
	})
}

// inventory returns a kept read when it is at most maxAge old or reuse
// accepts it (nil: never), and unless ownChanges and this client changed
// something since.
func (c *Client) inventory(ctx context.Context, maxAge time.Duration, ownChanges bool, reuse func(Inventory) bool) (Inventory, error) {
	if err := c.inv.lock(ctx); err != nil {
		return Inventory{}, err
	}
	defer c.inv.unlock()
	gen := c.inv.changes.Load()
	if !c.inv.at.IsZero() && (c.inv.gen == gen || !ownChanges) &&
		(time.Since(c.inv.at) <= maxAge || (reuse != nil && reuse(c.inv.inv))) {
		return c.inv.inv, nil
	}
	at, nodesGen, nodesClaimed := time.Now(), c.disc.memoryChanges.Load(), c.disc.claimedChanges.Load()
	inv, err := c.readInventory(ctx, "")
	if err != nil {
		return Inventory{}, err
	}
	inv.At = at
	c.inv.at, c.inv.gen, c.inv.inv = at, gen, inv
	c.forgetGone(inv, at)
	c.inv.smu.Lock()
	c.inv.storages = inv.Storages
	c.inv.smu.Unlock()
	// The node list of discovery (Nodes) is the same answer: PVE builds
	// the node entries of /cluster/resources and of GET /nodes alike
	// (pve-manager PVE/API2Tools.pm extract_node_stats, usage only with
	// Sys.Audit on the node), so this read stands in for that one.
	c.disc.reads.offer("nodes", nodesGen, nodesClaimed, at, inv.Nodes)
	return inv, nil
}

// lock takes the cache for one read, or fails when ctx ends first.
func (ic *inventoryCache) lock(ctx context.Context) error {
	ic.slotOnce.Do(func() { ic.slot = make(chan struct{}, 1) })
	select {
	case ic.slot <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("listing the VMs of the cluster: gave up waiting for another read of /cluster/resources "+
			"(the Proxmox API may not answer): %w", context.Cause(ctx))
	}
}

func (ic *inventoryCache) unlock() { <-ic.slot }

// readInventory reads /cluster/resources with the query given ("" or
// "?type=vm").
func (c *Client) readInventory(ctx context.Context, query string) (Inventory, error) {
	var items []struct {
		Type     string      `json:"type"`
		VMID     json.Number `json:"vmid"`
		Node     string      `json:"node"`
		Name     string      `json:"name"`
		Status   string      `json:"status"`
		Template json.Number `json:"template"`
		Pool     string      `json:"pool"`
		Tags     string      `json:"tags"`
		Lock     string      `json:"lock"`
		HAState  string      `json:"hastate"`
		Uptime   json.Number `json:"uptime"`
		MaxMem   json.Number `json:"maxmem"`
		Mem      json.Number `json:"mem"`
		MaxCPU   json.Number `json:"maxcpu"`
		Storage  string      `json:"storage"`
		Content  string      `json:"content"`
		Shared   json.Number `json:"shared"`
		MaxDisk  json.Number `json:"maxdisk"`
		Disk     json.Number `json:"disk"`
	}
	err := DefaultRetry.Retry(ctx, "listing the VMs of the cluster", true, func(ctx context.Context) error {
		// raw: ClusterResource has no `lock` and holds vmid/template/uptime as plain
		// uint64; Cluster.Resources needs Client.Cluster first (GET /cluster/status)
		return c.get(ctx, "/cluster/resources"+query, &items)
	})
	if err != nil {
		return Inventory{}, err
	}
	inv := Inventory{Offline: map[string]bool{}, Uptime: map[string]time.Duration{}, Storages: map[string][]StorageInfo{}}
	for _, it := range items {
		switch it.Type {
		case "storage":
			// "available": pvestatd of that node found it active and
			// enabled (pve-manager PVE/Service/pvestatd.pm
			// update_storage_status) within the last 5 minutes (pmxcfs
			// keeps an RRD entry that long, pve-cluster status.c
			// rrd_entry_is_old); "unknown" tells nothing
			if it.Status != "available" || it.Storage == "" || it.Node == "" {
				continue
			}
			maxDisk, _ := it.MaxDisk.Int64()
			disk, _ := it.Disk.Int64()
			inv.Storages[it.Node] = append(inv.Storages[it.Node], StorageInfo{Name: it.Storage,
				Content: splitContent(it.Content), Active: true, Enabled: true, Shared: it.Shared.String() == "1",
				Avail: uint64(max(maxDisk-disk, 0))})
		case "node":
			inv.Nodes = append(inv.Nodes, nodeInfo(it.Node, it.Status, it.MaxMem, it.Mem, it.MaxCPU))
			if it.Status != "online" {
				inv.Offline[it.Node] = true
			} else if up, err := it.Uptime.Int64(); err == nil && up > 0 {
				inv.Uptime[it.Node] = time.Duration(up) * time.Second
			}
		case "qemu", "lxc":
			id, err := it.VMID.Int64()
			if err != nil {
				continue
			}
			inv.Guests = append(inv.Guests, ClusterVM{VMID: int(id), Type: it.Type, Node: it.Node, Name: it.Name,
				Status: it.Status, Template: it.Template.String() == "1", Pool: it.Pool, Lock: it.Lock, HAState: it.HAState,
				Tags: strings.FieldsFunc(it.Tags, func(r rune) bool { return r == ';' || r == ',' || r == ' ' })})
		}
	}
	return inv, nil
}
