package pve

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// FaultRule is a deterministic fault: it strikes at chosen API calls or
// tasks, or at a chosen time, instead of by chance like the rates in
// Faults. A rule names exactly one of Call, Task or PowerOff.
type FaultRule struct {
	// Call is a method and API schema path, for example
	// "POST /nodes/{node}/qemu/{vmid}/status/start": the matching calls
	// fail with Status and Message before they do anything.
	Call string
	// Task is a worker type ("qmstart", "qmclone", "qmcreate", "download",
	// "qmdestroy", ...): the matching tasks fail before they do their work,
	// running their cleanup like any failed worker; with NodeOff their node
	// loses power in the middle of them instead.
	Task string
	// PowerOff names a node that loses power After the rule is set, for For
	// (its VMs stop, its running tasks die; VMs with onboot=1 start again
	// when it is back, see startAllLocked).
	PowerOff string
	// Node limits Call and Task rules to one node ("": any).
	Node string
	// Nth is the first matching call or task that strikes: 1 (the
	// default) is the next one, 2 the one after it.
	Nth int
	// Count is how many matching calls or tasks strike from the Nth on
	// (default 1; negative: every one from the Nth on).
	Count int
	// Status of a failed call (default 500).
	Status int
	// Message is the error text. Default: for calls "lab fault injection:
	// internal server error (script)", for tasks a transient failure
	// Proxmox really reports for that task type (see transientTaskError).
	Message string
	// NodeOff: a Task rule takes the task's node down in the middle of
	// the task instead of failing it.
	NodeOff bool
	// Lost: a Call rule lets the call run and loses its answer: the client
	// sees the error although the call did what it asked (a proxy that
	// failed on the way back).
	Lost bool
	// Hold: a Task rule keeps the matching tasks running, before their
	// work, until ReleaseHeldTasks; what their API call did before the
	// worker forked stands meanwhile (a create's "lock: create" config).
	// With Message the held task then fails with it, as a failed worker.
	// It is how tests keep a long create (an import, a busy storage)
	// running across other calls at any time scale.
	Hold bool
	// After delays a PowerOff rule (real time, from when it is set).
	After time.Duration
	// For is how long a node taken down stays unreachable (default
	// Faults.NodeDowntime).
	For time.Duration
}

func (r FaultRule) String() string {
	var parts []string
	add := func(k, v string) { parts = append(parts, k+"="+v) }
	switch {
	case r.Call != "":
		add("call", r.Call)
	case r.Task != "":
		add("task", r.Task)
	default:
		add("power-off", r.PowerOff)
	}
	if r.Node != "" {
		add("node", r.Node)
	}
	if r.Nth > 1 {
		add("nth", strconv.Itoa(r.Nth))
	}
	if r.Count != 0 && r.Count != 1 {
		add("count", strconv.Itoa(r.Count))
	}
	if r.NodeOff {
		parts = append(parts, "node-off")
	}
	if r.Lost {
		parts = append(parts, "lost")
	}
	if r.Hold {
		parts = append(parts, "hold")
	}
	return strings.Join(parts, ",")
}

func (r FaultRule) nth() int {
	if r.Nth < 1 {
		return 1
	}
	return r.Nth
}

// strikes reports whether the seen-th matching event (1-based) strikes.
func (r FaultRule) strikes(seen int) bool {
	first := r.nth()
	if seen < first {
		return false
	}
	count := r.Count
	if count == 0 {
		count = 1
	}
	return count < 0 || seen < first+count
}

func (r FaultRule) validate() error {
	set := 0
	for _, s := range []string{r.Call, r.Task, r.PowerOff} {
		if s != "" {
			set++
		}
	}
	if set != 1 {
		return fmt.Errorf("lab: fault rule %q must name exactly one of call, task or power-off", r)
	}
	if r.Call != "" {
		method, path, ok := strings.Cut(r.Call, " ")
		if !ok || method != strings.ToUpper(method) || !strings.HasPrefix(path, "/") {
			return fmt.Errorf("lab: fault rule call %q is not \"METHOD /schema/path\", for example "+
				"\"POST /nodes/{node}/qemu/{vmid}/status/start\"", r.Call)
		}
	}
	if r.NodeOff && r.Task == "" {
		return fmt.Errorf("lab: fault rule %q: node-off applies to task rules", r)
	}
	if r.Lost && r.Call == "" {
		return fmt.Errorf("lab: fault rule %q: lost applies to call rules", r)
	}
	if r.Hold && (r.Task == "" || r.NodeOff) {
		return fmt.Errorf("lab: fault rule %q: hold applies to task rules without node-off", r)
	}
	if r.Status != 0 && (r.Status < 400 || r.Status > 599) {
		return fmt.Errorf("lab: fault rule %q: status %d is not an HTTP error status", r, r.Status)
	}
	return nil
}

// ParseFaultScript reads fault rules as the lab's -fault-script flag takes
// them: rules separated by ';', each a ','-separated list of key=value:
//
//	call=POST /nodes/{node}/qemu/{vmid}/status/start,nth=1,count=2,status=500
//	task=qmstart,node=pve2,msg=start failed: QEMU exited with code 1
//	task=qmcreate,node-off,for=3s
//	task=qmcreate,hold
//	power-off=pve2,after=10s,for=30s
//
// Keys: call, task, power-off (what the rule strikes), node, nth, count,
// status, msg (the rest of the rule: it may hold commas), node-off, lost,
// hold, after, for.
func ParseFaultScript(script string) ([]FaultRule, error) {
	var out []FaultRule
	for _, text := range strings.Split(script, ";") {
		if strings.TrimSpace(text) == "" {
			continue
		}
		r, err := parseFaultRule(text)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func parseFaultRule(text string) (FaultRule, error) {
	var r FaultRule
	rest := strings.TrimSpace(text)
	for rest != "" {
		var field string
		if strings.HasPrefix(rest, "msg=") {
			field, rest = rest, "" // the message takes the rest
		} else {
			field, rest, _ = strings.Cut(rest, ",")
		}
		key, val, _ := strings.Cut(strings.TrimSpace(field), "=")
		val = strings.TrimSpace(val)
		var err error
		switch key {
		case "call":
			r.Call = val
		case "task":
			r.Task = val
		case "power-off":
			r.PowerOff = val
		case "node":
			r.Node = val
		case "nth":
			r.Nth, err = strconv.Atoi(val)
		case "count":
			r.Count, err = strconv.Atoi(val)
		case "status":
			r.Status, err = strconv.Atoi(val)
		case "msg":
			r.Message = val
		case "node-off":
			r.NodeOff = val == "" || val == "1" || val == "true"
		case "lost":
			r.Lost = val == "" || val == "1" || val == "true"
		case "hold":
			r.Hold = val == "" || val == "1" || val == "true"
		case "after":
			r.After, err = time.ParseDuration(val)
		case "for":
			r.For, err = time.ParseDuration(val)
		default:
			return r, fmt.Errorf("lab: fault rule %q: unknown key %q (call, task, power-off, node, nth, count, "+
				"status, msg, node-off, lost, hold, after, for)", text, key)
		}
		if err != nil {
			return r, fmt.Errorf("lab: fault rule %q: %s: %w", text, key, err)
		}
	}
	return r, r.validate()
}

// FaultStrike records a fault rule that struck.
type FaultStrike struct {
	Rule FaultRule
	// What it hit: "POST /nodes/pve1/qemu/100/status/start", a UPID, or a
	// node name.
	What string
	At   time.Time
}

// scriptState counts the events each rule of the current script matched.
type scriptState struct {
	seen    []int
	calls   map[string]int
	gen     int // bumped by SetFaults: pending power-offs of older scripts are void
	strikes []FaultStrike
	// held is closed by ReleaseHeldTasks: the tasks a Hold rule struck
	// wait for it
	held chan struct{}
}

// ReleaseHeldTasks lets the tasks that Hold rules hold go on (see
// FaultRule.Hold); tasks held later wait for the next release.
func (s *Server) ReleaseHeldTasks() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.script.held != nil {
		close(s.script.held)
		s.script.held = nil
	}
}

// FaultStrikes lists the fault rules that struck since the faults were
// last set, oldest first.
func (s *Server) FaultStrikes() []FaultStrike {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]FaultStrike(nil), s.script.strikes...)
}

// resetScriptLocked starts counting for a new script and schedules its
// power-off rules. Called with s.mu held.
func (s *Server) resetScriptLocked() {
	s.script.gen++
	s.script.seen = make([]int, len(s.faults.Script))
	s.script.calls = map[string]int{}
	s.script.strikes = nil
	gen := s.script.gen
	for i, r := range s.faults.Script {
		if r.PowerOff == "" {
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			select {
			case <-time.After(r.After):
			case <-s.ctx.Done():
				return
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			n := s.node(r.PowerOff)
			if s.script.gen != gen || n == nil || !n.online {
				return
			}
			s.script.seen[i]++
			s.recordStrikeLocked(r, r.PowerOff)
			s.powerLossLocked(n, s.downtime(r))
		}()
	}
}

func (s *Server) downtime(r FaultRule) time.Duration {
	if r.For > 0 {
		return r.For
	}
	return s.faults.nodeDowntime()
}

func (s *Server) recordStrikeLocked(r FaultRule, what string) {
	s.logf("fault script: %s strikes %s", r, what)
	s.script.strikes = append(s.script.strikes, FaultStrike{Rule: r, What: what, At: time.Now()})
}

// scriptCallLocked counts an API call (see Calls) and matches it against
// the call rules: it returns the error of the rule that strikes it, if
// any, and whether the call runs first (Lost). Called with s.mu held.
func (s *Server) scriptCallLocked(method, schemaPath, node, path string) (hit *apiError, lost bool) {
	s.script.calls[method+" "+schemaPath]++
	for i, r := range s.faults.Script {
		if r.Call == "" || r.Call != method+" "+schemaPath || (r.Node != "" && r.Node != node) {
			continue
		}
		s.script.seen[i]++
		if hit != nil || !r.strikes(s.script.seen[i]) {
			continue
		}
		s.recordStrikeLocked(r, method+" "+path)
		status, msg := r.Status, r.Message
		if status == 0 {
			status = 500
		}
		if msg == "" {
			msg = "lab fault injection: internal server error (script)"
		}
		hit, lost = &apiError{code: status, msg: msg + "\n"}, r.Lost
	}
	return hit, lost
}

// Calls counts the API calls of a method and schema path that passed
// authentication and node checks since the faults were last set ("POST
// /nodes/{node}/qemu"): what tests check when a call must not be repeated.
func (s *Server) Calls(call string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.script.calls[call]
}

// scriptTaskLocked counts a new task against the task rules: down > 0 says
// that its node loses power in the middle of it, fail that the worker fails
// (with fail) before doing its work, hold (non-nil) that the worker waits
// for it to close first. Called with s.mu held.
func (s *Server) scriptTaskLocked(node, typ, id, upid string) (down time.Duration, hold <-chan struct{}, fail error) {
	for i, r := range s.faults.Script {
		if r.Task == "" || r.Task != typ || (r.Node != "" && r.Node != node) {
			continue
		}
		s.script.seen[i]++
		if fail != nil || down > 0 || !r.strikes(s.script.seen[i]) {
			continue
		}
		s.recordStrikeLocked(r, upid)
		if r.NodeOff {
			down = s.downtime(r)
			continue
		}
		if r.Hold {
			if s.script.held == nil {
				s.script.held = make(chan struct{})
			}
			hold = s.script.held
			if r.Message != "" {
				fail = fmt.Errorf("%s\n", r.Message)
			}
			continue
		}
		if r.Message != "" {
			fail = fmt.Errorf("%s\n", r.Message)
		} else {
			fail = transientTaskError(typ, id)
		}
	}
	return down, hold, fail
}

// transientTaskError is a failure Proxmox reports for a cause that passes:
// a lock or command that timed out (pve-common PVE/Tools.pm lock_file_full
// and PVE/Cmd.pm run_command: "command '...' failed: got timeout"),
// systemd not answering in time when a VM's scope is set up
// (pve-common PVE/Systemd.pm: "timeout waiting on systemd"), or a download
// whose network failed (wget's exit status 4). These are what the random
// TaskFailureRate and a task rule without a message inject.
func transientTaskError(typ, id string) error {
	switch typ {
	case "qmstart":
		return fmt.Errorf("timeout waiting on systemd\n")
	case "qmcreate":
		return fmt.Errorf("unable to create VM %s - command '/sbin/lvcreate -aly -V 4194304k --name vm-%s-disk-0 "+
			"--thinpool pve/data' failed: got timeout\n", id, id)
	case "qmclone":
		return fmt.Errorf("clone failed: command '/sbin/lvcreate -aly -V 4194304k --thinpool pve/data' " +
			"failed: got timeout\n")
	case "download":
		return fmt.Errorf("download failed: command '/usr/bin/wget --progress=dot:giga -O %s.tmp_dwnl' "+
			"failed: exit code 4\n", id)
	}
	if _, err := strconv.Atoi(id); err == nil {
		return lockTimeout(mustAtoi(id))
	}
	return fmt.Errorf("command failed: got timeout\n")
}

func mustAtoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
