package pve

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// NodeWait bounds how long a planning read (see Planning) waits for one
// Proxmox node. pveproxy proxies every /nodes/{node}/... request to that
// node (pve-http-server AnyEvent.pm proxy_request) and gives up only after
// 30 s without an answer (596 "Connection timed out"), or answers 595 when
// it cannot connect; a node powered off shows as offline in
// /cluster/resources, and is not asked at all, but a node that is a cluster
// member and does not answer (a hung pveproxy or pmxcfs, a link that drops
// packets) shows as online. Without a bound, every retry of every read of a
// preview would wait for it, up to DefaultRetry's 10 minutes.
const NodeWait = 10 * time.Second

// planningKey marks a context whose reads plan (Check, Diff, a preview's
// component): they may go on without a node that does not answer.
type planningKey struct{}

// Planning marks ctx for reads that plan rather than change: a read of
// /nodes/{node}/... under it waits at most NodeWait (Options.NodeWait) for
// that node, and a
// node that did not answer one is not asked again by planning reads of this
// client (NodeSilentError at once), so that a preview asks it a bounded
// number of times.
func Planning(ctx context.Context) context.Context {
	return context.WithValue(ctx, planningKey{}, true)
}

func isPlanning(ctx context.Context) bool {
	v, _ := ctx.Value(planningKey{}).(bool)
	return v
}

// NodeSilentError says that a Proxmox node did not answer a planning read
// within NodeWait, or that an earlier one found so. It is never retried:
// waiting longer is what it bounds.
type NodeSilentError struct {
	Node string
	// Why is what the first read that found it got, as text: the
	// pveproxy answer or the timeout.
	Why string
}

func (e *NodeSilentError) Error() string {
	return fmt.Sprintf("Proxmox node %s does not answer (%s)", e.Node, e.Why)
}

// NodeSilent reports whether err is a NodeSilentError, and its node.
func NodeSilent(err error) (string, bool) {
	var ns *NodeSilentError
	if errors.As(err, &ns) {
		return ns.Node, true
	}
	return "", false
}

// nodeAnswers remembers the nodes that did not answer a planning read.
type nodeAnswers struct {
	mu     sync.Mutex
	silent map[string]*NodeSilentError
}

func (na *nodeAnswers) get(node string) *NodeSilentError {
	na.mu.Lock()
	defer na.mu.Unlock()
	return na.silent[node]
}

func (na *nodeAnswers) mark(node, why string) *NodeSilentError {
	na.mu.Lock()
	defer na.mu.Unlock()
	if e := na.silent[node]; e != nil {
		return e
	}
	if na.silent == nil {
		na.silent = map[string]*NodeSilentError{}
	}
	e := &NodeSilentError{Node: node, Why: why}
	na.silent[node] = e
	return e
}

func (na *nodeAnswers) answered(node string) {
	na.mu.Lock()
	defer na.mu.Unlock()
	delete(na.silent, node)
}

// Silent reports whether a planning read of this client found node not
// answering (and no read has had an answer from it since).
func (c *Client) Silent(node string) bool { return c.answers.get(node) != nil }

// Silence is the NodeSilentError of node when Silent, else nil: for the
// reads that do not ask the node themselves but say why it was not asked.
func (c *Client) Silence(node string) error {
	if e := c.answers.get(node); e != nil {
		return e
	}
	return nil
}

// nodeOfPath is the {node} of a /nodes/{node}/... path ("" for others).
func nodeOfPath(path string) string {
	rest, ok := strings.CutPrefix(path, "/nodes/")
	if !ok {
		return ""
	}
	node, _, _ := strings.Cut(rest, "/")
	node, _, _ = strings.Cut(node, "?")
	return node
}

// getFromNode is get for a path of node: under Planning, bounded by
// NodeWait, and refused at once for a node found silent before. A timeout
// of its own, or pveproxy's 595/596 (it could not connect to the node, or
// the node did not answer it), marks the node silent.
func (c *Client) getFromNode(ctx context.Context, node, path string, out any) error {
	if !isPlanning(ctx) {
		err := c.getOnce(ctx, path, out)
		if err == nil {
			c.answers.answered(node)
		}
		return err
	}
	if e := c.answers.get(node); e != nil {
		return e
	}
	rctx, cancel := context.WithTimeout(ctx, c.nodeWait)
	defer cancel()
	err := c.getOnce(rctx, path, out)
	if err == nil {
		c.answers.answered(node)
		return nil
	}
	if ctx.Err() != nil {
		return err // the caller gave up, not the node
	}
	var ae *APIError
	switch {
	case rctx.Err() != nil:
		return c.answers.mark(node, fmt.Sprintf("no answer within %s", c.nodeWait))
	case errors.As(err, &ae) && (ae.Status == 595 || ae.Status == 596):
		return c.answers.mark(node, fmt.Sprintf("%d %s", ae.Status, strings.TrimSpace(ae.Message)))
	}
	return err
}
