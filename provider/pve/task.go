package pve

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/backoff"
	"github.com/proxmoxtalos/proxmoxtalos/provider/killpoint"
)

// UPID identifies a Proxmox task:
// UPID:<node>:<pid>:<pstart>:<starttime>:<type>:<id>:<user>:
type UPID struct {
	Raw  string
	Node string
	Type string
	ID   string
}

// ParseUPID splits a task id into the parts callers need.
func ParseUPID(s string) (UPID, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 8 || parts[0] != "UPID" || parts[1] == "" {
		return UPID{}, fmt.Errorf("Proxmox returned %q where a task id (UPID:node:...) was expected", s)
	}
	return UPID{Raw: s, Node: parts[1], Type: parts[5], ID: parts[6]}, nil
}

// TaskError is a task that finished with an exit status other than success.
type TaskError struct {
	UPID       UPID
	ExitStatus string
	// LogTail holds the last lines of the task log.
	LogTail []string
}

func (e *TaskError) Error() string {
	what := e.UPID.Type
	if e.UPID.ID != "" {
		what += " " + e.UPID.ID
	}
	msg := fmt.Sprintf("Proxmox task %s on node %s failed: %s", what, e.UPID.Node, e.ExitStatus)
	if e.ExitStatus == unexpectedStatus {
		msg += " (its worker process ended without a result: the node restarted or the process was killed)"
	}
	if len(e.LogTail) > 0 {
		msg += "; task log ends with:\n  " + strings.Join(e.LogTail, "\n  ")
	}
	return msg
}

// TaskSucceeded interprets a finished task's exit status. "OK" succeeds, and
// so does "WARNINGS: N", which Proxmox uses for tasks that completed but
// logged warnings (pve-common src/PVE/UPID.pm status_is_error). go-proxmox treats the
// latter as failed and its Task.Wait returns nil for real failures, so the
// status is checked here instead.
func TaskSucceeded(exitStatus string) (ok bool, warnings int) {
	if exitStatus == "OK" {
		return true, 0
	}
	if rest, found := strings.CutPrefix(exitStatus, "WARNINGS: "); found {
		n, err := strconv.Atoi(strings.TrimSpace(rest))
		if err == nil {
			return true, n
		}
	}
	return false, 0
}

// unexpectedStatus is the exit status of a task whose worker died before
// writing its final log line (pve-common src/PVE/UPID.pm read_status).
const unexpectedStatus = "unexpected status"

type taskStatus struct {
	Status     string `json:"status"`
	ExitStatus string `json:"exitstatus"`
}

type taskLogLine struct {
	N int    `json:"n"`
	T string `json:"t"`
}

// maxFailedPolls is how many task status reads in a row may fail with a
// server error before WaitTask gives up.
const maxFailedPolls = 5

// WaitTask waits for the task to stop and checks its exit status. It polls
// with a growing interval (package backoff), logs progress through the context's logger every
// 30 seconds, and gives up when ctx is done.
func (c *Client) WaitTask(ctx context.Context, upid string) error {
	id, err := ParseUPID(upid)
	if err != nil {
		return err
	}
	// escaped: a UPID's worker id may hold '%' (pve-common encode_text)
	path := fmt.Sprintf("/nodes/%s/tasks/%s/status", id.Node, url.PathEscape(upid))
	start := time.Now()
	lastLog := start
	// from taskPoll up to 2s: short tasks (config, start) end within the
	// first polls, long ones (clone, download) are polled every 2 seconds
	poll := backoff.Loop{Policy: backoff.Policy{Initial: c.taskPoll, Max: 2 * time.Second}}
	failedPolls := 0
	err = poll.Run(ctx, func(ctx context.Context, _ int) (bool, error) {
		var st taskStatus
		// raw: Task.Ping puts the UPID in the path unescaped, and proxmox.Task's
		// decoder type-asserts starttime/endtime to float64 (panics otherwise)
		err := c.get(ctx, path, &st)
		if err == nil {
			failedPolls = 0
		}
		switch {
		case err != nil && (Classify(err) == KindTransient || Classify(err) == KindUnreachable) && ctx.Err() == nil:
			// keep polling: the task runs on regardless of our connection
		case err != nil && Classify(err) == KindOther && ctx.Err() == nil && failedPolls < maxFailedPolls:
			// a server error on a read: the task runs on, and giving up
			// here would fail an operation that may well succeed
			failedPolls++
		case err != nil:
			return true, fmt.Errorf("waiting for Proxmox task %s %s on node %s: %w", id.Type, id.ID, id.Node, err)
		case st.Status != "running":
			ok, warnings := TaskSucceeded(st.ExitStatus)
			if ok {
				if warnings > 0 {
					Logf(ctx, "Proxmox task %s %s on node %s finished with %d warning(s)", id.Type, id.ID, id.Node, warnings)
				}
				return true, nil
			}
			return true, &TaskError{UPID: id, ExitStatus: st.ExitStatus, LogTail: c.taskLogTail(ctx, id, 10)}
		}
		if time.Since(lastLog) >= 30*time.Second {
			lastLog = time.Now()
			Logf(ctx, "still waiting for Proxmox task %s %s on node %s (%s so far)",
				id.Type, id.ID, id.Node, time.Since(start).Round(time.Second))
		}
		return false, err
	})
	if _, ok := backoff.AsExhausted(err); ok {
		// only the context ends this loop
		return fmt.Errorf("gave up waiting for Proxmox task %s %s on node %s after %s: %w",
			id.Type, id.ID, id.Node, time.Since(start).Round(time.Second), ctx.Err())
	}
	return err
}

// taskLogTail returns up to n last lines of the task log; best effort.
func (c *Client) taskLogTail(ctx context.Context, id UPID, n int) []string {
	var lines []taskLogLine
	// raw: Task.Log puts the UPID in the path unescaped; proxmox.Log is a map
	// (line order lost) that type-asserts n and t (panics otherwise)
	path := fmt.Sprintf("/nodes/%s/tasks/%s/log?start=0&limit=1000", id.Node, url.PathEscape(id.Raw))
	if err := c.get(ctx, path, &lines); err != nil {
		return nil
	}
	var out []string
	for _, l := range lines {
		if t := strings.TrimSpace(l.T); t != "" && t != "no content" {
			out = append(out, t)
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// startTask runs a call that answers with a task id and waits for the task.
func (c *Client) startTask(ctx context.Context, call func(out *string) error) error {
	return c.startTaskAt(ctx, "", call)
}

// startTaskAt is startTask that passes the named kill point (a test hook,
// see package killpoint) once the task runs.
func (c *Client) startTaskAt(ctx context.Context, point string, call func(out *string) error) error {
	var upid string
	if err := call(&upid); err != nil {
		return err
	}
	if upid == "" {
		return nil // some calls answer null when there was nothing to do
	}
	c.own.Store(upid, true)
	defer c.own.Delete(upid)
	// the task's work shows only when it ends (or fails half-way)
	defer c.writeDone()
	killpoint.Reach(point)
	return c.WaitTask(ctx, upid)
}

// ForeignActiveTasks lists the running tasks of type typ for id on node
// that this process did not start: the work of another client, or of a
// run of the provider that was killed.
func (c *Client) ForeignActiveTasks(ctx context.Context, node, typ, id string) ([]string, error) {
	var tasks []struct {
		UPID string `json:"upid"`
		ID   string `json:"id"`
	}
	// raw: Node.Tasks needs Client.Node first, and proxmox.Task's decoder
	// panics on a starttime/endtime that is not a JSON number
	path := fmt.Sprintf("/nodes/%s/tasks?source=active&typefilter=%s&limit=500", node, url.QueryEscape(typ))
	if err := c.get(ctx, path, &tasks); err != nil {
		return nil, err
	}
	var out []string
	for _, t := range tasks {
		if _, mine := c.own.Load(t.UPID); t.ID == id && !mine {
			out = append(out, t.UPID)
		}
	}
	return out, nil
}
