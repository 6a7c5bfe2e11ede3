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

// getFromNode is get for a path of node: under Planning, refused at once
// for a node found silent before, and convicting a node only on evidence
// that the node itself does not answer: pveproxy's 595/596 (it could not
// connect to the node, or the node did not answer it), or a read still
// unanswered after half of NodeWait whose node then also leaves the cheap
// probe (probeNode) unanswered for the other half. A read that is merely slow while its
// node answers the probe is waited for without the planning bound: on real
// PVE, /nodes/{node}/storage and storage content lists can take long on a
// healthy node while an NFS/CIFS/PBS storage is unreachable (pve-storage
// PVE/Storage.pm storage_info asks every enabled storage for its status,
// and the network plugins check their server first, each with its own
// timeouts), and that says nothing about the node's VMs.
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
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.getOnce(rctx, path, out) }()
	var err error
	// The read and the probe share NodeWait (half each), so that a node
	// that answers neither is known within NodeWait, and a preview warns
	// about it within 15 s (issue 10).
	t := time.NewTimer(c.nodeWait / 2)
	select {
	case err = <-done:
		t.Stop()
	case <-t.C:
		probe := make(chan string, 1)
		go func() { probe <- c.probeNode(ctx, node) }()
		select {
		case err = <-done: // the read answered while the node was probed
		case why := <-probe:
			if why != "" && ctx.Err() == nil {
				cancel()
				// wait for the read so that out is not written after we
				// return; it may have answered just as the probe gave up
				if err = <-done; err == nil {
					c.answers.answered(node)
					return nil
				}
				return c.answers.mark(node, why)
			}
			// The node answers: the read is slow, not the node. A 596
			// pveproxy may still give it after its 30 s is that read's.
			if err = <-done; err == nil {
				c.answers.answered(node)
			}
			return err
		}
	}
	if err == nil {
		c.answers.answered(node)
		return nil
	}
	if ctx.Err() != nil {
		return err // the caller gave up, not the node
	}
	var ae *APIError
	if errors.As(err, &ae) && (ae.Status == 595 || ae.Status == 596) {
		return c.answers.mark(node, fmt.Sprintf("%d %s", ae.Status, strings.TrimSpace(ae.Message)))
	}
	return err
}

// probeNode asks node the cheapest question pveproxy proxies to it, GET
// /nodes/{node}/version (every user may ask it: `permissions => { user =>
// 'all' }` in PVE/API2/Nodes.pm), waiting at most half of NodeWait (the
// read it follows waited the other half). It returns why
// the node counts as not answering, or "" when it answered anything (even
// a refusal comes from the node) or pveproxy itself failed (not the node's
// doing).
func (c *Client) probeNode(ctx context.Context, node string) string {
	pctx, cancel := context.WithTimeout(ctx, c.nodeWait/2)
	defer cancel()
	var v struct{}
	err := c.getOnce(pctx, "/nodes/"+node+"/version", &v)
	var ae *APIError
	switch {
	case err == nil:
		return ""
	case pctx.Err() != nil && ctx.Err() == nil:
		return fmt.Sprintf("no answer within %s", c.nodeWait) // nor to the read before
	case errors.As(err, &ae) && (ae.Status == 595 || ae.Status == 596):
		return fmt.Sprintf("%d %s", ae.Status, strings.TrimSpace(ae.Message))
	}
	return ""
}
