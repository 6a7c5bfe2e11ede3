package pve

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// NodeInfo is one cluster node as GET /nodes lists it.
type NodeInfo struct {
	Name   string
	Online bool
	// MaxMem and Mem are the node's total and used memory in bytes.
	MaxMem uint64
	Mem    uint64
	// MaxCPU is the node's logical CPU count (0 when not reported).
	MaxCPU int
}

// Nodes lists the cluster's nodes, as read once per provider process (see
// discovery): again after this client changed a node's memory in use.
func (c *Client) Nodes(ctx context.Context) ([]NodeInfo, error) {
	nodes, _, err := c.nodesAt(ctx)
	return nodes, err
}

// nodesAt is Nodes and when its answer was read.
func (c *Client) nodesAt(ctx context.Context) ([]NodeInfo, time.Time, error) {
	return cachedReadAt(ctx, &c.disc.reads, "nodes", c.disc.memoryChanges.Load, c.disc.claimedChanges.Load, 0, c.readNodes)
}

// CheckNodes is the node list for a VM's Check and when it was read. With
// fresh false it is the list this client read last also after it started
// VMs it creates (WithClaimedStart), as long as it changed nothing else
// since: MemoryClaims.StartedSince(at) then tells what those VMs take, and
// a new cluster's workers, checked once the control planes' VMs run, need
// no read of their own. With fresh true, or after any other change, it is
// Nodes.
func (c *Client) CheckNodes(ctx context.Context, fresh bool) ([]NodeInfo, time.Time, error) {
	if !fresh {
		e := c.disc.reads.entry("nodes")
		e.mu.Lock()
		// every change since the list's read was a claimed start
		ok := e.ok && c.disc.memoryChanges.Load()-e.gen == c.disc.claimedChanges.Load()-e.aux
		nodes, at := e.value, e.at
		e.mu.Unlock()
		if ok {
			return slices.Clone(nodes.([]NodeInfo)), at, nil
		}
	}
	return c.nodesAt(ctx)
}

func (c *Client) readNodes(ctx context.Context) ([]NodeInfo, error) {
	var items []struct {
		Node   string      `json:"node"`
		Status string      `json:"status"`
		MaxMem json.Number `json:"maxmem"`
		Mem    json.Number `json:"mem"`
		MaxCPU json.Number `json:"maxcpu"`
	}
	err := DefaultRetry.Retry(ctx, "listing the nodes of the cluster", true, func(ctx context.Context) error {
		// raw: Client.Nodes' NodeStatus holds maxcpu/mem/maxmem as plain ints
		return c.get(ctx, "/nodes", &items)
	})
	if err != nil {
		return nil, err
	}
	out := make([]NodeInfo, 0, len(items))
	for _, it := range items {
		out = append(out, nodeInfo(it.Node, it.Status, it.MaxMem, it.Mem, it.MaxCPU))
	}
	return out, nil
}

// nodeInfo is a node entry of GET /nodes or /cluster/resources.
func nodeInfo(name, status string, maxMem, mem, maxCPU json.Number) NodeInfo {
	mx, _ := maxMem.Int64()
	m, _ := mem.Int64()
	cpus, _ := maxCPU.Int64()
	return NodeInfo{Name: name, Online: status == "online",
		MaxMem: uint64(max(mx, 0)), Mem: uint64(max(m, 0)), MaxCPU: int(max(cpus, 0))}
}

// Bridges lists the names of the network bridges (Linux, OVS and SDN
// VNets) a VM on node can attach to, as read once per provider process (see
// discovery).
func (c *Client) Bridges(ctx context.Context, node string) ([]string, error) {
	return cachedRead(ctx, &c.disc.reads, "bridges/"+node, noChanges, 0, func(ctx context.Context) ([]string, error) {
		return c.readBridges(ctx, node)
	})
}

func (c *Client) readBridges(ctx context.Context, node string) ([]string, error) {
	var items []struct {
		Iface string `json:"iface"`
	}
	// raw: Node.Networks needs Client.Node first; NodeNetwork's plain ints
	// (autostart, priority) add failure modes for the one field used (iface)
	path := fmt.Sprintf("/nodes/%s/network?type=any_bridge", node)
	err := DefaultRetry.Retry(ctx, "listing the bridges of node "+node, true, func(ctx context.Context) error {
		return c.get(ctx, path, &items)
	})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, it.Iface)
	}
	return out, nil
}

// StorageInfo is one storage as seen from a node.
type StorageInfo struct {
	Name    string
	Content []string
	Active  bool
	Enabled bool
	Shared  bool
	// Avail is the free space in bytes.
	Avail uint64
}

// Holds reports whether the storage accepts the content type ("images", "iso", "import").
func (s StorageInfo) Holds(content string) bool {
	for _, c := range s.Content {
		if c == content {
			return true
		}
	}
	return false
}

// Storages lists the storages available on node, as read once per provider
// process (see discovery; Avail is as free as it was then).
func (c *Client) Storages(ctx context.Context, node string) ([]StorageInfo, error) {
	return cachedRead(ctx, &c.disc.reads, "storages/"+node, noChanges, 0, func(ctx context.Context) ([]StorageInfo, error) {
		return c.readStorages(ctx, node)
	})
}

func (c *Client) readStorages(ctx context.Context, node string) ([]StorageInfo, error) {
	var items []struct {
		Storage string      `json:"storage"`
		Content string      `json:"content"`
		Active  json.Number `json:"active"`
		Enabled json.Number `json:"enabled"`
		Shared  json.Number `json:"shared"`
		Avail   json.Number `json:"avail"`
	}
	// raw: Node.Storages needs Client.Node first; Storage.Enabled is a plain
	// int, so an answer without `enabled` would read as disabled
	path := fmt.Sprintf("/nodes/%s/storage", node)
	err := DefaultRetry.Retry(ctx, "listing the storages of node "+node, true, func(ctx context.Context) error {
		return c.get(ctx, path, &items)
	})
	if err != nil {
		return nil, err
	}
	out := make([]StorageInfo, 0, len(items))
	for _, it := range items {
		avail, _ := it.Avail.Int64()
		out = append(out, StorageInfo{Name: it.Storage, Content: splitContent(it.Content),
			Active: it.Active.String() == "1", Enabled: it.Enabled.String() != "0",
			Shared: it.Shared.String() == "1", Avail: uint64(max(avail, 0))})
	}
	return out, nil
}

// splitContent splits a storage's content types ("images,iso").
func splitContent(list string) []string {
	var content []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			content = append(content, s)
		}
	}
	return content
}

// ReportedStorages are the storages the last inventory this client read
// (GET /cluster/resources) reports "available" on node; ok is false when
// it reported none there (or none was read).
//
// They answer for the node's storage list (GET /nodes/{node}/storage) only
// where they say something: PVE lists a storage in /cluster/resources for
// a token with Datastore.Audit on it (pve-manager PVE/API2/Cluster.pm
// resources), on each node where it is enabled, with its configured
// content types and shared flag, which the node's list gives alike
// (pve-storage storage_info); but the node's list also shows storages the
// token may only allocate space on (Datastore.AllocateSpace), and one
// whose status is "unknown" there may be active. A storage missing from
// them is no evidence of anything: ask Storages (see StorageOn).
func (c *Client) ReportedStorages(node string) ([]StorageInfo, bool) {
	c.inv.smu.Lock()
	defer c.inv.smu.Unlock()
	s, ok := c.inv.storages[node]
	return slices.Clone(s), ok && len(s) > 0
}

// StorageOn finds storage name on node: in ReportedStorages when it is
// there, else in the node's storage list (Storages).
func (c *Client) StorageOn(ctx context.Context, node, name string) (StorageInfo, bool, error) {
	// a node a read of this run found silent stays so (see Silence)
	if err := c.Silence(node); err != nil {
		return StorageInfo{}, false, err
	}
	reported, _ := c.ReportedStorages(node)
	for _, s := range reported {
		if s.Name == name {
			return s, true, nil
		}
	}
	list, err := c.Storages(ctx, node)
	if err != nil {
		return StorageInfo{}, false, err
	}
	for _, s := range list {
		if s.Name == name {
			return s, true, nil
		}
	}
	return StorageInfo{}, false, nil
}
