package cluster

import (
	"context"
	"sync"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
)

// throughWait is how long the other nodes' readings wait for the connection
// to the node they are read through (a few milliseconds when it answers);
// past it they ask their nodes directly, as they would without one.
const throughWait = 2 * time.Second

// throughAttempt bounds one reading through that connection: a node it does
// not answer for within it is asked directly.
const throughAttempt = readTimeout / 4

// throughMax bounds readNodesThrough as a whole (readNodes: readTimeout): a
// node may wait throughWait for the connection, then throughAttempt for
// its reading through it, then be asked directly with a full readTimeout of
// its own.
const throughMax = throughWait + throughAttempt + readTimeout

// readNodesThrough is readNodes with readRunningConfig (what Construct does
// unless tests replace the reader or the preview is offline), making one
// connection instead of one per node: the first running control plane is
// read directly and every other node through its apid (talosapi.
// ReadActiveConfigThrough; TLS handshakes were most of a no-op preview's
// Talos reads, issue 14). A node not read so (no such connection within
// throughWait, or it did not answer through it within throughAttempt) is
// asked directly, which is what tells a silent node, one in maintenance mode
// or one of another cluster apart. That direct read is readNodes's own read
// with a full readTimeout of its own, not what is left of the control
// plane's: a node that answers (again) within readTimeout of that read's
// start is read, as readNodes would read it. It starts at most throughWait
// + throughAttempt (4.5 s) later, so the whole reading takes at most
// throughMax (14.5 s; readNodes: 10 s) when nodes do not answer, and about
// as long as before when they do.
// direct is readRunningConfig (tests count its calls).
func readNodesThrough(ctx context.Context, prev *plan.State, creds *talosapi.Credentials, direct configReader) map[string]nodeReading {
	return readNodesVia(ctx, prev, creds, throughReads{
		first: readRunningConfigKeep, through: readThrough, direct: direct,
		wait: throughWait, attempt: throughAttempt,
	})
}

// throughReads are readNodesThrough's reads and bounds; unit tests replace
// them with fakes and shorter bounds.
type throughReads struct {
	// first reads the control plane read through, keeping its connection.
	first func(ctx context.Context, node string, creds *talosapi.Credentials) (runningNode, *talosapi.Conn, error)
	// through reads node through that connection.
	through func(ctx context.Context, conn *talosapi.Conn, node string) (runningNode, error)
	// direct asks a node directly.
	direct configReader
	// wait and attempt are throughWait and throughAttempt.
	wait, attempt time.Duration
}

// readNodesVia is readNodesThrough with its reads and bounds given.
func readNodesVia(ctx context.Context, prev *plan.State, creds *talosapi.Credentials, r throughReads) map[string]nodeReading {
	var via *plan.NodeState
	for i := range prev.Nodes {
		if n := &prev.Nodes[i]; n.Power == plan.PowerRunning && n.Role == plan.RoleControlPlane {
			via = n
			break
		}
	}
	if via == nil || creds == nil {
		return readNodes(ctx, prev, creds, r.direct)
	}
	// rctx bounds the control plane's read and every attempt through it, as
	// readNodes bounds its reads; the direct reads below derive from ctx.
	rctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	out := make(map[string]nodeReading, len(prev.Nodes))
	var mu sync.Mutex
	record := func(name string, running runningNode, err error) {
		mu.Lock()
		out[name] = nodeReading{running: running, err: err}
		mu.Unlock()
	}
	var (
		wg      sync.WaitGroup
		conn    *talosapi.Conn // set before connect is closed
		connect = make(chan struct{})
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		running, c, err := r.first(rctx, via.Address, creds)
		conn = c
		close(connect)
		record(via.Name, running, err)
	}()
	for _, n := range prev.Nodes {
		if n.Power != plan.PowerRunning || n.Name == via.Name {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c := awaitConn(rctx, r.wait, connect, &conn); c != nil && n.Address != via.Address {
				actx, cancel := context.WithTimeout(rctx, r.attempt)
				running, err := r.through(actx, c, n.Address)
				cancel()
				if err == nil {
					record(n.Name, running, nil)
					return
				}
			}
			// Its own readTimeout, as in readNodes (finding 1 of the
			// 2026-11-29 01:15 review: inside rctx it lost up to 4.5 s,
			// enough to miss a node whose apid comes back late).
			dctx, cancel := context.WithTimeout(ctx, readTimeout)
			defer cancel()
			running, err := r.direct(dctx, n.Address, creds)
			record(n.Name, running, err)
		}()
	}
	wg.Wait()
	conn.Close() //nolint:errcheck // read-only; nothing to flush
	return out
}

// awaitConn is the connection to read through once it is known (nil if
// there is none), or nil when it is not known within wait.
func awaitConn(ctx context.Context, wait time.Duration, connect <-chan struct{}, conn **talosapi.Conn) *talosapi.Conn {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-connect:
		return *conn
	case <-t.C:
		return nil
	case <-ctx.Done():
		return nil
	}
}

// readRunningConfigKeep is readRunningConfig keeping the connection open
// when the node answered over mTLS (nil otherwise).
func readRunningConfigKeep(ctx context.Context, node string, creds *talosapi.Credentials) (runningNode, *talosapi.Conn, error) {
	nc, mode, version, conn, err := talosapi.ReadActiveConfigKeep(ctx, talosapi.Target{Node: node, Creds: creds, Configured: true},
		readOptions())
	if err != nil || mode == talosapi.ModeMaintenance {
		return runningNode{}, conn, err
	}
	return runningNode{Config: string(nc.Active), TalosVersion: version}, conn, nil
}

// readThrough reads node through conn (see readNodesThrough).
func readThrough(ctx context.Context, conn *talosapi.Conn, node string) (runningNode, error) {
	o := readOptions()
	o.AttemptTimeout = throughAttempt
	nc, version, err := talosapi.ReadActiveConfigThrough(ctx, conn, node, o)
	if err != nil {
		return runningNode{}, err
	}
	return runningNode{Config: string(nc.Active), TalosVersion: version}, nil
}
