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
	cancel         context.CancelFunc // DELETE /tasks/{upid}: the worker gets SIGTERM

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

// startTask forks a worker: it returns the UPID at once and runs fn in the
// background. fn's error becomes the exit status (and "TASK ERROR: ..." in
// the log). Called with s.mu held.
func (s *Server) startTask(node, typ, id, user string, fn func(ctx context.Context, l *taskLog) error) string {
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
	l := &taskLog{s: s, t: t}
	ctx, cancel := context.WithCancel(s.ctx)
	t.cancel = cancel
	inject := s.rollLocked(s.faults.TaskFailureRate)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		var err error
		if inject {
			err = fmt.Errorf("lab fault injection: %s task failed (TaskFailureRate)\n", typ)
		} else {
			err = fn(ctx, l)
		}
		if errors.Is(err, context.Canceled) {
			// What a worker killed by SIGTERM leaves (PVE's fork_worker).
			err = fmt.Errorf("received interrupt\n")
		}
		t.logMu.Lock()
		var exit string
		switch {
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
	}()
	return t.upid
}

func errorText(err error) string {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.msg
	}
	return err.Error()
}

// status answers /tasks/{upid}/status. The first read of a task always
// reports it running, so clients see the asynchronous path even at time
// scale 0.
func (t *task) status(consume bool) map[string]any {
	st := map[string]any{
		"upid": t.upid, "node": t.node, "pid": t.pid, "pstart": t.pstart,
		"starttime": t.start.Unix(), "type": t.typ, "id": t.id, "user": t.user,
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

// sleep waits d scaled by the time scale, or until the lab stops.
func (s *Server) sleep(ctx context.Context, d time.Duration) error {
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
