package pve

import (
	"strconv"
	"strings"
	"time"
)

// hNodes is GET /nodes (pve-manager PVE/API2/Nodes.pm index): every node,
// its usage only for callers with Sys.Audit on it.
func (s *Server) hNodes(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, n := range s.nodes {
		out = append(out, s.nodeEntryLocked(r.user, n, false))
	}
	return out, nil
}

// hNodeStatus is /nodes/{node}/status.
func (s *Server) hNodeStatus(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.node(r.p["node"])
	total := n.spec.MemoryMiB << 20
	used := s.nodeUsedMemLocked(n.spec.Name) << 20
	var rootUsed, rootTotal int64
	if st := n.storage("local"); st != nil {
		rootUsed, rootTotal = st.used(), st.total()
	}
	return map[string]any{
		"cpu": 0.01, "wait": 0, "idle": 0,
		"uptime":     int64(time.Since(n.bootTime).Seconds()),
		"loadavg":    []string{"0.10", "0.12", "0.09"},
		"kversion":   "Linux 6.17.2-1-pve #1 SMP PREEMPT_DYNAMIC PMX 6.17.2-1 (lab) x86_64",
		"pveversion": "pve-manager/" + Version + "/" + repoID,
		"cpuinfo": map[string]any{
			"cpus": n.spec.Cores, "cores": n.spec.Cores, "sockets": 1, "model": "Lab Virtual CPU",
			"mhz": "2400.000", "hvm": "1", "flags": "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ht syscall nx lm constant_tsc pni vmx ssse3 cx16 sse4_1 sse4_2 popcnt aes avx avx2", "user_hz": 100,
		},
		"memory":    map[string]any{"total": total, "used": used, "free": total - used, "available": total - used},
		"swap":      map[string]any{"total": 0, "used": 0, "free": 0},
		"rootfs":    map[string]any{"total": rootTotal, "used": rootUsed, "free": rootTotal - rootUsed, "avail": rootTotal - rootUsed},
		"ksm":       map[string]any{"shared": 0},
		"boot-info": map[string]any{"mode": "efi", "secureboot": 0},
		"current-kernel": map[string]any{
			"sysname": "Linux", "release": "6.17.2-1-pve", "machine": "x86_64", "version": "#1 SMP PREEMPT_DYNAMIC PMX 6.17.2-1 (lab)",
		},
	}, nil
}

func (s *Server) hNodeVersion(*request) (any, error) {
	return map[string]any{"version": Version, "release": release, "repoid": repoID}, nil
}

// hNetwork is /nodes/{node}/network: one physical NIC and the node's bridges.
func (s *Server) hNetwork(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.node(r.p["node"])
	typ := r.p["type"]
	out := []map[string]any{}
	for _, iface := range s.interfaces(n) {
		t := iface["type"].(string)
		// bridges only where the caller may audit or use them
		// (PVE/API2/Network.pm index, check_sdn_bridge)
		if t == "bridge" && r.user != "root@pam" &&
			!s.checkSDNBridgeLocked(r.user, "localnetwork", iface["iface"].(string), "SDN.Audit", "SDN.Use") {
			continue
		}
		switch typ {
		case "", "include_sdn":
		case "any_bridge", "any_local_bridge":
			if t != "bridge" && t != "OVSBridge" {
				continue
			}
		default:
			if t != typ {
				continue
			}
		}
		out = append(out, iface)
	}
	return out, nil
}

func (s *Server) interfaces(n *node) []map[string]any {
	idx := 0
	for i, other := range s.nodes {
		if other == n {
			idx = i + 1
		}
	}
	out := []map[string]any{{
		"iface": "eno1", "type": "eth", "active": 1, "autostart": 0, "method": "manual", "method6": "manual",
		"families": []string{"inet"}, "priority": 3,
	}}
	for i, b := range n.spec.Bridges {
		br := map[string]any{
			"iface": b, "type": "bridge", "active": 1, "autostart": 1, "method": "manual", "method6": "manual",
			"bridge_stp": "off", "bridge_fd": "0", "families": []string{"inet"}, "priority": 4 + i,
		}
		if i == 0 {
			br["bridge_ports"] = "eno1"
			br["method"] = "static"
			br["cidr"] = "192.0.2." + strconv.Itoa(10+idx) + "/24"
			br["address"] = "192.0.2." + strconv.Itoa(10+idx)
			br["netmask"] = "24"
			br["gateway"] = "192.0.2.1"
		} else {
			br["bridge_vlan_aware"] = 1
			br["bridge_vids"] = "2-4094"
		}
		out = append(out, br)
	}
	return out
}

func (s *Server) hNetworkIface(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, iface := range s.interfaces(s.node(r.p["node"])) {
		if iface["iface"] == r.p["iface"] {
			return iface, nil
		}
	}
	return nil, param1("iface", "interface does not exist")
}

// taskLocked finds a task by UPID on the node of the request (the task log
// lives on the node that ran it).
func (s *Server) taskLocked(r *request) (*task, error) {
	id := r.p["upid"]
	parts := strings.Split(id, ":")
	if len(parts) < 9 || parts[0] != "UPID" {
		return nil, param1("upid", "unable to parse worker upid")
	}
	t, ok := s.tasks[id]
	if !ok || t.node != r.p["node"] {
		return nil, param1("upid", "no such task")
	}
	return t, nil
}

// taskAccessLocked: the task's owner may read (and stop) it, anyone else
// needs priv on the task's node (pve-manager PVE/API2/Tasks.pm
// $check_task_user: a token owns its tasks, a user its own and its tokens').
func (s *Server) taskAccessLocked(r *request, t *task, priv string) error {
	user, tokenid := t.owner()
	if r.user == user || (tokenid != "" && r.user == user+"!"+tokenid) {
		return nil
	}
	return s.checkLocked(r.user, "/nodes/"+r.p["node"], priv)
}

func (s *Server) hTaskStatus(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.taskLocked(r)
	if err != nil {
		return nil, err
	}
	if err := s.taskAccessLocked(r, t, "Sys.Audit"); err != nil {
		return nil, err
	}
	return t.status(true), nil
}

func (s *Server) hTaskIndex(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.taskLocked(r); err != nil {
		return nil, err
	}
	return []map[string]string{{"name": "log"}, {"name": "status"}}, nil
}

// hTaskLog is dump_logfile: lines numbered from 1, "start"/"limit" paging
// (limit 0 reads to the end), "no content" for an empty log, "total" set.
func (s *Server) hTaskLog(r *request) (any, error) {
	s.mu.Lock()
	t, err := s.taskLocked(r)
	if err == nil {
		err = s.taskAccessLocked(r, t, "Sys.Audit")
	}
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	start, limit := 0, 50
	if v, ok := r.p["start"]; ok {
		start, _ = strconv.Atoi(v)
	}
	if v, ok := r.p["limit"]; ok {
		limit, _ = strconv.Atoi(v)
	}
	lines := t.lines()
	out := []map[string]any{}
	for i, line := range lines {
		if i < start {
			continue
		}
		if limit > 0 && len(out) >= limit {
			break
		}
		out = append(out, map[string]any{"n": i + 1, "t": line})
	}
	count := len(lines)
	if count == 0 {
		count = 1
		out = append(out, map[string]any{"n": 1, "t": "no content"})
	}
	return result{data: out, total: count}, nil
}

// hTaskStop is DELETE /tasks/{upid}: the worker is interrupted where it
// waits (a download, a copy, a shutdown) and ends with "received
// interrupt"; work already done stays done.
func (s *Server) hTaskStop(r *request) (any, error) {
	s.mu.Lock()
	t, err := s.taskLocked(r)
	if err == nil {
		err = s.taskAccessLocked(r, t, "Sys.Modify")
	}
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	t.cancel(nil)
	return nil, nil
}

// hNodeTasks lists a node's tasks, newest first, with the usual filters.
func (s *Server) hNodeTasks(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	start, limit := 0, 50
	if v, ok := r.p["start"]; ok {
		start, _ = strconv.Atoi(v)
	}
	if v, ok := r.p["limit"]; ok {
		limit, _ = strconv.Atoi(v)
	}
	auditor := s.hasLocked(r.user, "/nodes/"+r.p["node"], "Sys.Audit")
	var all []map[string]any
	for i := len(s.taskOrder) - 1; i >= 0; i-- {
		t := s.taskOrder[i]
		if t.node != r.p["node"] {
			continue
		}
		if user, tokenid := t.owner(); !auditor && r.user != user && (tokenid == "" || r.user != user+"!"+tokenid) {
			continue
		}
		if f := r.p["userfilter"]; f != "" {
			if user, _ := t.owner(); !strings.Contains(strings.ToLower(user), strings.ToLower(f)) {
				continue
			}
		}
		if v := r.p["vmid"]; v != "" && t.id != v {
			continue
		}
		if v := r.p["typefilter"]; v != "" && t.typ != v {
			continue
		}
		if r.p["source"] == "active" && t.done {
			continue
		}
		if r.p["errors"] == "1" && (!t.done || t.exit == "OK") {
			continue
		}
		all = append(all, taskListEntry(t))
	}
	out := []map[string]any{}
	for i, e := range all {
		if i >= start && len(out) < limit {
			out = append(out, e)
		}
	}
	return result{data: out, total: len(all)}, nil
}
