package pve

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Version is the PVE release the lab reports (the schema it embeds).
const (
	Version = "9.1.3"
	release = "9.1"
	repoID  = "lab"
)

func (s *Server) hVersion(*request) (any, error) {
	return map[string]any{"version": Version, "release": release, "repoid": repoID, "console": "html5"}, nil
}

// hNextID is pve-manager PVE/API2/Cluster.pm nextid: the lowest free id in
// [100, 1000000), or a check that the given id is free. The id comes back
// as a string (PVE's return value check stringifies it; go-proxmox decodes
// a string).
func (s *Server) hNextID(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := r.p["vmid"]; ok {
		id, _ := strconv.Atoi(v)
		if s.idUsedLocked(id) {
			return nil, param1("vmid", fmt.Sprintf("VM %d already exists", id))
		}
		return v, nil
	}
	for i := 100; i < 1000*1000; i++ {
		if !s.idUsedLocked(i) {
			return strconv.Itoa(i), nil
		}
	}
	return nil, fail("unable to get any free VMID in range [100, 1000000]\n")
}

func (s *Server) hClusterStatus(*request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{{
		"type": "cluster", "id": "cluster", "name": "lab", "nodes": len(s.nodes), "quorate": 1, "version": len(s.nodes),
	}}
	for i, n := range s.nodes {
		out = append(out, map[string]any{
			"type": "node", "id": "node/" + n.spec.Name, "name": n.spec.Name, "nodeid": i + 1,
			"online": boolInt(n.online), "local": boolInt(i == 0), "level": "", "ip": fmt.Sprintf("127.0.0.%d", i+1),
		})
	}
	return out, nil
}

// hResources is /cluster/resources with the optional type filter
// (pve-manager PVE/API2/Cluster.pm resources): guests the caller holds
// VM.Audit on (their pool only with Pool.Audit on it), every node (its
// usage only with Sys.Audit on it), storages with Datastore.Audit, pools
// with Pool.Audit.
func (s *Server) hResources(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	typ := r.p["type"]
	var out []map[string]any
	if typ == "" || typ == "vm" {
		audit := func(id int, e map[string]any) {
			if !s.hasLocked(r.user, fmt.Sprintf("/vms/%d", id), "VM.Audit") {
				return
			}
			if p, ok := e["pool"].(string); ok && !s.hasLocked(r.user, "/pool/"+p, "Pool.Audit") {
				delete(e, "pool")
			}
			out = append(out, e)
		}
		for _, id := range s.vmIDsLocked() {
			audit(id, s.vmResourceLocked(s.vms[id]))
		}
		for _, id := range s.containerIDsLocked() {
			audit(id, s.cts[id].resource(id))
		}
	}
	if typ == "" || typ == "node" {
		for _, n := range s.nodes {
			out = append(out, s.nodeEntryLocked(r.user, n, true))
		}
	}
	if typ == "" || typ == "storage" {
		for _, n := range s.nodes {
			for _, st := range n.storages {
				if !s.hasLocked(r.user, "/storage/"+st.spec.ID, "Datastore.Audit") {
					continue
				}
				out = append(out, map[string]any{
					"id": "storage/" + n.spec.Name + "/" + st.spec.ID, "type": "storage", "storage": st.spec.ID,
					"node": n.spec.Name, "status": availability(n.online), "content": strings.Join(st.spec.Content, ","),
					"plugintype": st.spec.Type, "maxdisk": st.total(), "disk": st.used(), "shared": 0,
				})
			}
		}
	}
	if typ == "" || typ == "pool" {
		for _, id := range slices.Sorted(maps.Keys(s.pools)) {
			if s.hasLocked(r.user, "/pool/"+id, "Pool.Audit") {
				out = append(out, map[string]any{"id": "/pool/" + id, "type": "pool", "pool": id})
			}
		}
	}
	if out == nil {
		out = []map[string]any{}
	}
	return out, nil
}

func availability(online bool) string {
	if online {
		return "available"
	}
	return "unknown"
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (s *Server) vmResourceLocked(v *vm) map[string]any {
	st := s.vmStatusLocked(v)
	res := map[string]any{"id": fmt.Sprintf("qemu/%d", v.vmid), "type": "qemu", "node": v.node}
	for _, k := range []string{"vmid", "name", "status", "maxmem", "mem", "maxdisk", "disk", "cpu", "uptime", "template", "tags", "lock", "netin", "netout", "diskread", "diskwrite"} {
		if val, ok := st[k]; ok {
			res[k] = val
		}
	}
	res["maxcpu"] = st["cpus"]
	if v.paused {
		// pvestatd broadcasts qmpstatus || status (pvestatd.pm
		// update_qemu_status), which /cluster/resources reports
		res["status"] = "paused"
	}
	if n := s.node(v.node); n != nil && !n.online {
		// a node that is down sends no status updates: pve-manager
		// PVE/API2Tools.pm extract_vm_stats answers 'unknown' for a guest
		// without current data; its config (lock, tags) is cluster-wide
		res["status"] = "unknown"
	}
	if p := s.poolOfLocked(v.vmid); p != "" {
		res["pool"] = p
	}
	return res
}

// nodeEntryLocked is a node as /nodes and /cluster/resources list it: its
// usage figures only for callers with Sys.Audit on it (API2Tools.pm
// extract_node_stats with $exclude_stats).
func (s *Server) nodeEntryLocked(user string, n *node, resource bool) map[string]any {
	m := s.nodeSummaryLocked(n, resource)
	if !s.hasLocked(user, "/nodes/"+n.spec.Name, "Sys.Audit") {
		for _, k := range []string{"uptime", "cpu", "mem", "disk", "maxcpu", "maxmem", "maxdisk"} {
			delete(m, k)
		}
	}
	return m
}

func (s *Server) nodeSummaryLocked(n *node, resource bool) map[string]any {
	usedMem := s.nodeUsedMemLocked(n.spec.Name)
	var disk, maxdisk int64
	for _, st := range n.storages {
		if st.spec.ID == "local" {
			disk, maxdisk = st.used(), st.total()
		}
	}
	m := map[string]any{
		"node": n.spec.Name, "id": "node/" + n.spec.Name, "type": "node", "level": "",
		"maxcpu": n.spec.Cores, "maxmem": n.spec.MemoryMiB << 20, "mem": usedMem << 20,
		"disk": disk, "maxdisk": maxdisk, "cpu": 0.01, "ssl_fingerprint": "lab",
	}
	if n.online {
		m["status"] = "online"
		m["uptime"] = int64(time.Since(n.bootTime).Seconds())
	} else {
		m["status"] = "offline"
	}
	return m
}

// nodeUsedMemLocked is the memory in MiB the host and its running guests use.
func (s *Server) nodeUsedMemLocked(name string) int64 {
	used := int64(hostReservedMiB)
	for _, v := range s.vms {
		if v.node == name && v.running {
			used += v.memoryMiB
		}
	}
	return used
}

func (s *Server) poolOfLocked(vmid int) string {
	for _, id := range slices.Sorted(maps.Keys(s.pools)) {
		if s.pools[id].vms[vmid] {
			return id
		}
	}
	return ""
}

// hClusterTasks lists recent tasks of all nodes: all of them with
// Sys.Audit on /, else those whose user is the caller. The user of a
// token's task is the token's user, so a token sees none of its own tasks
// here (pve-manager PVE/API2/Cluster.pm tasks compares the split user).
func (s *Server) hClusterTasks(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := s.hasLocked(r.user, "/", "Sys.Audit")
	out := []map[string]any{}
	for i := len(s.taskOrder) - 1; i >= 0; i-- {
		e := taskListEntry(s.taskOrder[i])
		if all || e["user"] == r.user {
			out = append(out, e)
		}
	}
	return out, nil
}

func taskListEntry(t *task) map[string]any {
	e := map[string]any{
		"upid": t.upid, "node": t.node, "pid": t.pid, "pstart": t.pstart, "starttime": t.start.Unix(),
		"type": t.typ, "id": t.id,
	}
	e["user"], e["tokenid"] = t.owner()
	if e["tokenid"] == "" {
		delete(e, "tokenid")
	}
	if t.done {
		e["status"] = t.exit
		e["endtime"] = t.end.Unix()
	}
	return e
}

// hStorageList is /storage: the storage configuration (storage.cfg), of
// the storages the caller holds Datastore.Audit or
// Datastore.AllocateSpace on (pve-storage API2/Storage/Config.pm index).
func (s *Server) hStorageList(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, c := range s.storageConfigsLocked("") {
		if s.checkAnyLocked(r.user, "/storage/"+c["storage"].(string), "Datastore.Audit", "Datastore.AllocateSpace") == nil {
			out = append(out, c)
		}
	}
	return out, nil
}

func (s *Server) hStorageGet(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.storageConfigsLocked(r.p["storage"]) {
		return c, nil
	}
	return nil, fail("storage '%s' does not exist\n", r.p["storage"])
}

// storageConfigsLocked merges the nodes' storages by id: a storage that not
// every node has is restricted with "nodes".
func (s *Server) storageConfigsLocked(only string) []map[string]any {
	type agg struct {
		spec  StorageSpec
		nodes []string
	}
	var order []string
	byID := map[string]*agg{}
	for _, n := range s.nodes {
		for _, st := range n.storages {
			a, ok := byID[st.spec.ID]
			if !ok {
				a = &agg{spec: st.spec}
				byID[st.spec.ID] = a
				order = append(order, st.spec.ID)
			}
			a.nodes = append(a.nodes, n.spec.Name)
		}
	}
	out := []map[string]any{}
	for _, id := range order {
		if only != "" && id != only {
			continue
		}
		a := byID[id]
		c := map[string]any{"storage": id, "type": a.spec.Type, "content": strings.Join(a.spec.Content, ","), "digest": "lab"}
		switch a.spec.Type {
		case "dir":
			c["path"] = "/var/lib/vz"
		case "lvmthin":
			c["thinpool"], c["vgname"] = "data", "pve"
		}
		if len(a.nodes) != len(s.nodes) {
			c["nodes"] = strings.Join(a.nodes, ",")
		}
		out = append(out, c)
	}
	return out
}
