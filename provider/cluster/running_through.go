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
// not answer for within it is asked directly in the time readTimeout leaves.
const throughAttempt = readTimeout / 4

// readNodesThrough is readNodes with readRunningConfig (what Construct does
// unless tests replace the reader or the preview is offline), making one
// connection instead of one per node: the first running control plane is
// read directly and every other node through its apid (talosapi.
// ReadActiveConfigThrough; TLS handshakes were most of a no-op preview's
// Talos reads, issue 14). A node not read so (no such connection within
// throughWait, or it did not answer through it) is asked directly, which is
// what tells a silent node, one in maintenance mode or one of another
// cluster apart; so every reading is what readNodes would have given, within
// the same readTimeout.
// direct is readRunningConfig (tests count its calls).
func readNodesThrough(ctx context.Context, prev *plan.State, creds *talosapi.Credentials, direct configReader) map[string]nodeReading {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	var via *plan.NodeState
	for i := range prev.Nodes {
		if n := &prev.Nodes[i]; n.Power == plan.PowerRunning && n.Role == plan.RoleControlPlane {
			via = n
			break
		}
	}
	if via == nil || creds == nil {
		return readNodes(ctx, prev, creds, direct)
	}
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
		running, c, err := readRunningConfigKeep(ctx, via.Address, creds)
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
			if c := awaitConn(ctx, connect, &conn); c != nil && n.Address != via.Address {
				if running, err := readThrough(ctx, c, n.Address); err == nil {
					record(n.Name, running, nil)
					return
				}
			}
			running, err := direct(ctx, n.Address, creds)
			record(n.Name, running, err)
		}()
	}
	wg.Wait()
	conn.Close() //nolint:errcheck // read-only; nothing to flush
	return out
}

// awaitConn is the connection to read through once it is known (nil if
// there is none), or nil when it is not known within throughWait.
func awaitConn(ctx context.Context, connect <-chan struct{}, conn **talosapi.Conn) *talosapi.Conn {
	t := time.NewTimer(throughWait)
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
