package pve

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// task is a PVE worker task (PVE::RESTEnvironment::fork_worker).
type task struct {
	upid           string
	node, typ, id  string
	user           string
	pid, pstart    uint32
	start, end     time.Time
	done           bool
	exit           string // "OK", "WARNINGS: N" or the error message
	statusReadOnce bool
	finished       chan struct{}
	// cancel interrupts the worker: with nil (DELETE /tasks/{upid}) it
	// gets SIGTERM and cleans up; with errPowerLoss it dies where it is.
	cancel context.CancelCauseFunc
	killed bool // died with its node: no result, no cleanup
	// restartDown > 0: the node loses power for that long at the worker's
	// first wait (a node restart fault); guarded by Server.mu.
	restartDown time.Duration

	logMu    sync.Mutex // guards log and warnings; never held with s.mu taken after it
	log      []string
	warnings int
}

// taskLog is what a worker function writes to.
type taskLog struct {
	s *Server
	t *task
}

// Logf appends a line to the task log. A nil log discards it (synchronous
// API calls have no task).
func (l *taskLog) Logf(format string, args ...any) {
	if l == nil {
		return
	}
	l.t.logMu.Lock()
	defer l.t.logMu.Unlock()
	l.t.log = append(l.t.log, strings.Split(strings.TrimRight(fmt.Sprintf(format, args...), "\n"), "\n")...)
}

// Warnf logs a warning; the task then ends with "WARNINGS: N" (log_warn).
func (l *taskLog) Warnf(format string, args ...any) {
	if l == nil {
		return
	}
	l.t.logMu.Lock()
	defer l.t.logMu.Unlock()
	l.t.log = append(l.t.log, "WARN: "+strings.TrimRight(fmt.Sprintf(format, args...), "\n"))
	l.t.warnings++
}

// lines returns a copy of the log.
func (t *task) lines() []string {
	t.logMu.Lock()
	defer t.logMu.Unlock()
	return append([]string(nil), t.log...)
}

// upid renders a UPID like PVE::Tools::upid_encode:
// UPID:$node:$pid:$pstart:$starttime:$type:$id:$user: (hex fields, 8 digits).
func upid(node string, pid, pstart uint32, start time.Time, typ, id, user string) string {
	return fmt.Sprintf("UPID:%s:%08X:%08X:%08X:%s:%s:%s:", node, pid, pstart, uint32(start.Unix()), typ, id, user)
}

// errPowerLoss is the cause a worker's context is cancelled with when its
// node loses power: the worker process dies at once, its error handling
// (config removal, freeing volumes) never runs.
var errPowerLoss = errors.New("node lost power")

// powerLost reports whether the worker running with ctx died with its node.
// Workers skip their cleanup then, as a killed process would.
func powerLost(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errPowerLoss)
}

// startTask forks a worker: it returns the UPID at once and runs fn in the
// background. fn's error becomes the exit status (and "TASK ERROR: ..." in
// the log). Called with s.mu held.
func (s *Server) startTask(node, typ, id, user string, fn func(ctx context.Context, l *taskLog) error) string {
	return s.startTaskUndo(node, typ, id, user, fn, nil)
}

// startTaskUndo is startTask for workers whose API call changed state
// before forking (create's "lock: create" config): when an injected failure
// stops the worker before fn runs, undo is what the worker's own error
// handling removes. Called with s.mu held.
func (s *Server) startTaskUndo(node, typ, id, user string, fn func(ctx context.Context, l *taskLog) error, undo func()) string {
	s.pid++
	now := time.Now()
	t := &task{
		node: node, typ: typ, id: id, user: user,
		pid: s.pid, pstart: uint32(now.Sub(s.bootTime)/(10*time.Millisecond)) + 1000,
		start: now, finished: make(chan struct{}),
	}
	t.upid = upid(node, t.pid, t.pstart, now, typ, id, user)
	s.tasks[t.upid] = t
	s.taskOrder = append(s.taskOrder, t)
	s.stats.taskStarted(t)
	l := &taskLog{s: s, t: t}
	ctx, cancel := context.WithCancelCause(context.WithValue(s.ctx, taskKey{}, t))
	t.cancel = cancel
	var inject error
	if s.rollLocked(s.faults.TaskFailureRate) {
		inject = transientTaskError(typ, id)
	}
	scriptDown, hold, scripted := s.scriptTaskLocked(node, typ, id, t.upid)
	if inject == nil {
		inject = scripted
	}
	if restart, down := s.rollNodeRestartLocked(typ); restart && inject == nil {
		t.restartDown = down
	}
	if scriptDown > 0 && inject == nil {
		t.restartDown = scriptDown
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel(nil)
		if hold != nil {
			select {
			case <-hold:
			case <-ctx.Done(): // the lab stops, or the node lost power
			}
		}
		var err error
		switch {
		case inject != nil:
			s.logf("fault injection: task %s fails: %v", t.upid, inject)
			err = inject
			if undo != nil {
				undo()
			}
		default:
			err = fn(ctx, l)
			// a worker that never waited: the node goes down as it ends
			s.powerLossAt(ctx)
		}
		if errors.Is(err, context.Canceled) {
			// What a worker killed by SIGTERM leaves (PVE's fork_worker).
			err = fmt.Errorf("received interrupt\n")
		}
		s.finishTask(t, err)
	}()
	return t.upid
}

// finishTask records the worker's end. A worker that died with its node
// wrote no final "TASK ..." line, so its status reads "unexpected status"
// (pve-common src/PVE/UPID.pm read_status).
func (s *Server) finishTask(t *task, err error) {
	s.mu.Lock()
	killed := t.killed
	s.mu.Unlock()
	t.logMu.Lock()
	var exit string
	switch {
	case killed:
		exit = "unexpected status"
	case err != nil:
		msg := strings.TrimRight(errorText(err), "\n")
		t.log = append(t.log, "TASK ERROR: "+msg)
		exit = strings.SplitN(msg, "\n", 2)[0]
	case t.warnings > 0:
		exit = fmt.Sprintf("WARNINGS: %d", t.warnings)
		t.log = append(t.log, "TASK "+exit)
	default:
		exit = "OK"
		t.log = append(t.log, "TASK OK")
	}
	t.logMu.Unlock()
	s.mu.Lock()
	t.done, t.end, t.exit = true, time.Now(), exit
	close(t.finished)
	s.mu.Unlock()
	s.logf("task %s: %s", t.upid, exit)
}

func errorText(err error) string {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.msg
	}
	return err.Error()
}

// owner is the task's user split as the task API reports it
// (pve-manager PVE/API2/Tasks.pm $convert_token_task): a token's task has
// user "root@pam" and tokenid "lab"; the UPID keeps the full token id.
func (t *task) owner() (user, tokenid string) {
	if u, name, ok := splitTokenID(t.user); ok {
		return u, name
	}
	return t.user, ""
}

// status answers /tasks/{upid}/status. The first read of a task always
// reports it running, so clients see the asynchronous path even at time
// scale 0.
func (t *task) status(consume bool) map[string]any {
	st := map[string]any{
		"upid": t.upid, "node": t.node, "pid": t.pid, "pstart": t.pstart,
		"starttime": t.start.Unix(), "type": t.typ, "id": t.id,
	}
	st["user"], st["tokenid"] = t.owner()
	if st["tokenid"] == "" {
		delete(st, "tokenid")
	}
	running := !t.done
	if consume && !t.statusReadOnce {
		t.statusReadOnce = true
		running = true
	}
	if running {
		st["status"] = "running"
	} else {
		st["status"] = "stopped"
		st["exitstatus"] = t.exit
	}
	return st
}

// wait blocks until the task ends (for the lab's Go API and tests).
func (t *task) wait(ctx context.Context) error {
	select {
	case <-t.finished:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type taskKey struct{}

// powerLossAt takes the node of the task running with ctx down if a node
// restart fault is pending for it. It reports whether it did.
func (s *Server) powerLossAt(ctx context.Context) bool {
	t, _ := ctx.Value(taskKey{}).(*task)
	if t == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.restartDown <= 0 || t.killed {
		return false
	}
	down := t.restartDown
	t.restartDown = 0
	s.powerLossLocked(s.node(t.node), down)
	return true
}

// sleep waits d scaled by the time scale, or until the lab stops. It is
// where a worker waits, so a pending node restart fault strikes here: the
// worker dies in the middle of its work.
func (s *Server) sleep(ctx context.Context, d time.Duration) error {
	if s.powerLossAt(ctx) {
		return context.Cause(ctx)
	}
	d = time.Duration(float64(d) * s.opts.TimeScale)
	if d <= 0 {
		return ctx.Err()
	}
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
