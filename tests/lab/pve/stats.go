package pve

import (
	"encoding/json"
	"maps"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Stats is what the API served since the lab started (or since the last
// ResetStats): every authenticated request by kind, by VM, and every task
// with the status polls it got. Benchmarks read it (GET /lab/stats, or the
// lab command's -stats file) so that their request counts come from the
// server, not from a proxy in front of it. It holds no secret.
type Stats struct {
	Since time.Time `json:"since"`
	// Requests counts every authenticated request.
	Requests int `json:"requests"`
	// ByKind counts requests by method and schema path, as the API viewer
	// names them: "GET /nodes/{node}/qemu/{vmid}/config".
	ByKind map[string]int `json:"byKind"`
	// ByNode counts the authenticated requests whose path names a Proxmox
	// node (/nodes/{node}/...), by node, as they arrive: what pveproxy
	// proxies to that node, answered or not.
	ByNode map[string]int `json:"byNode"`
	// VMs are the requests that concern one VM, by VMID: its paths, its
	// create or clone (the new VMID), and the status polls of its tasks.
	VMs map[int]*VMStats `json:"vms"`
	// Tasks in start order.
	Tasks []*TaskStats `json:"tasks"`
}

// VMStats counts the requests concerning one VM.
type VMStats struct {
	Requests  int            `json:"requests"`
	TaskPolls int            `json:"taskPolls"`
	ByKind    map[string]int `json:"byKind"`
}

// TaskStats is one worker task and how it was polled.
type TaskStats struct {
	UPID string `json:"upid"`
	Type string `json:"type"`
	Node string `json:"node"`
	// VMID is the guest a qm task works on (0 for other tasks).
	VMID int `json:"vmid,omitempty"`
	// Seconds the task ran (0 while it runs).
	Seconds float64 `json:"seconds"`
	// Polls are the reads of its status.
	Polls int `json:"polls"`
	// NoticedAfter is how long after the task ended the first status read
	// that reported it stopped came, in seconds (-1: none came yet).
	NoticedAfter float64 `json:"noticedAfter"`
	// PollsAfterEnd counts status reads that found it stopped: more than
	// one means a client asked again what it had been told.
	PollsAfterEnd int `json:"pollsAfterEnd"`
}

// stats collects Stats. Its lock may be taken with Server.mu held, never
// the other way round.
type stats struct {
	mu    sync.Mutex
	s     Stats
	tasks map[string]*TaskStats
}

const kindTaskStatus = "GET /nodes/{node}/tasks/{upid}/status"

func (st *stats) resetLocked() {
	st.s = Stats{Since: time.Now(), ByKind: map[string]int{}, ByNode: map[string]int{}, VMs: map[int]*VMStats{}}
	st.tasks = map[string]*TaskStats{}
}

// request counts one served request. vmid is the VM it concerns (0: none).
func (st *stats) request(kind string, vmid int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.tasks == nil {
		st.resetLocked()
	}
	st.s.Requests++
	st.s.ByKind[kind]++
	if vmid > 0 {
		v := st.vmLocked(vmid)
		v.Requests++
		v.ByKind[kind]++
	}
}

// nodeRequest counts a request for a node's path as it arrives (before the
// node answers, if it does).
func (st *stats) nodeRequest(node string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.tasks == nil {
		st.resetLocked()
	}
	st.s.ByNode[node]++
}

func (st *stats) vmLocked(vmid int) *VMStats {
	v := st.s.VMs[vmid]
	if v == nil {
		v = &VMStats{ByKind: map[string]int{}}
		st.s.VMs[vmid] = v
	}
	return v
}

// taskStarted records a new task.
func (st *stats) taskStarted(t *task) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.tasks == nil {
		st.resetLocked()
	}
	ts := &TaskStats{UPID: t.upid, Type: t.typ, Node: t.node, NoticedAfter: -1}
	if strings.HasPrefix(t.typ, "qm") {
		ts.VMID, _ = strconv.Atoi(t.id)
	}
	st.tasks[t.upid] = ts
	st.s.Tasks = append(st.s.Tasks, ts)
}

// taskPolled records a status read of the task and what it answered.
func (st *stats) taskPolled(upid string, stopped bool, end time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	ts := st.tasks[upid]
	if ts == nil {
		return // started before the last reset
	}
	ts.Polls++
	if ts.VMID > 0 {
		v := st.vmLocked(ts.VMID)
		v.TaskPolls++
		v.Requests++
		v.ByKind[kindTaskStatus]++
	}
	if !stopped {
		return
	}
	ts.PollsAfterEnd++
	if ts.NoticedAfter < 0 {
		ts.NoticedAfter = max(0, time.Since(end).Seconds())
	}
}

// snapshot is a deep copy for callers, task durations not filled in.
func (st *stats) snapshot() Stats {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.tasks == nil {
		st.resetLocked()
	}
	out := Stats{Since: st.s.Since, Requests: st.s.Requests, ByKind: maps.Clone(st.s.ByKind), ByNode: maps.Clone(st.s.ByNode),
		VMs: map[int]*VMStats{}}
	for id, v := range st.s.VMs {
		c := &VMStats{Requests: v.Requests, TaskPolls: v.TaskPolls, ByKind: map[string]int{}}
		for k, n := range v.ByKind {
			c.ByKind[k] = n
		}
		out.VMs[id] = c
	}
	for _, t := range st.s.Tasks {
		c := *t
		out.Tasks = append(out.Tasks, &c)
	}
	return out
}

// Stats returns what the API served since the start or the last ResetStats.
func (s *Server) Stats() Stats {
	out := s.stats.snapshot() // stats.mu is never held while taking s.mu
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ts := range out.Tasks {
		if t := s.tasks[ts.UPID]; t != nil && t.done {
			ts.Seconds = t.end.Sub(t.start).Seconds()
		}
	}
	return out
}

// ResetStats starts counting afresh (tasks running now are not followed).
func (s *Server) ResetStats() {
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	s.stats.resetLocked()
}

// counted records a request the router served; data is the handler's answer.
func (s *Server) counted(kind string, pathVars map[string]string, raw map[string]any, data any) {
	if kind != kindTaskStatus {
		s.stats.request(kind, requestVMID(kind, pathVars, raw))
		return
	}
	s.stats.request(kind, 0)
	st, ok := data.(map[string]any)
	if !ok {
		return
	}
	upid, _ := st["upid"].(string)
	s.mu.Lock()
	var end time.Time
	if t := s.tasks[upid]; t != nil {
		end = t.end
	}
	s.mu.Unlock()
	s.stats.taskPolled(upid, st["status"] == "stopped", end)
}

// requestVMID is the VM a request concerns: the {vmid} of its path, the new
// VM of a create (vmid) or a clone (newid); 0 for none.
func requestVMID(kind string, pathVars map[string]string, raw map[string]any) int {
	if v, ok := pathVars["vmid"]; ok && !strings.HasSuffix(kind, "/clone") {
		id, _ := strconv.Atoi(v)
		return id
	}
	key := ""
	switch kind {
	case "POST /nodes/{node}/qemu":
		key = "vmid"
	case "POST /nodes/{node}/qemu/{vmid}/clone":
		key = "newid"
	default:
		return 0
	}
	switch v := raw[key].(type) {
	case string:
		id, _ := strconv.Atoi(v)
		return id
	case json.Number:
		id, _ := v.Int64()
		return int(id)
	}
	return 0
}

// serveStats answers the lab's own paths (not Proxmox's): GET /lab/stats
// is Stats as JSON, DELETE /lab/stats resets them. Callers are
// authenticated like API calls.
func (s *Server) serveStats(w http.ResponseWriter, hr *http.Request) {
	if _, aerr := s.authenticate(hr); aerr != nil {
		writeError(w, aerr)
		return
	}
	switch hr.Method {
	case http.MethodGet:
		body, err := json.Marshal(s.Stats())
		if err != nil {
			writeError(w, fail("lab: cannot encode the stats: %v\n", err))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	case http.MethodDelete:
		s.ResetStats()
		w.WriteHeader(http.StatusNoContent)
	default:
		writeError(w, &apiError{code: http.StatusMethodNotAllowed, msg: "GET or DELETE /lab/stats"})
	}
}

// SortedKinds lists the kinds of counts, most frequent first.
func SortedKinds(counts map[string]int) []string {
	out := make([]string, 0, len(counts))
	for k := range counts {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if counts[out[i]] != counts[out[j]] {
			return counts[out[i]] > counts[out[j]]
		}
		return out[i] < out[j]
	})
	return out
}
