package talosapi

import (
	"context"
	"errors"
	"fmt"
)

// ReadActiveConfigThrough is ReadActiveConfig of node through via, an
// open mTLS connection to another node of the same cluster whose apid
// proxies both calls (Version, then the MachineConfig resource) to node, as
// talosctl --endpoints via --nodes node does: this process makes no
// connection of its own to node, so reading the nodes of a cluster costs one
// TLS handshake instead of one per node (issue 14: a no-op preview reads
// every node). The proxy's apid presents its own client certificate to node
// and verifies node's against the cluster's OS CA, as this process would.
//
// Only a configured node of via's cluster can answer so. Any error (node
// silent, in maintenance mode, of another cluster, a proxy that cannot reach
// it) says nothing more: the caller asks node directly then
// (ReadActiveConfig), which tells those apart as it always did.
func ReadActiveConfigThrough(ctx context.Context, via *Conn, node string, o Options) (*NodeConfig, string, error) {
	if via == nil || via.Mode != ModeSecure || via.target.proxied() {
		return nil, "", errors.New("no mTLS connection to a node of the cluster to read through")
	}

	t := Target{Node: node, Endpoints: []string{via.target.Node}, Creds: via.target.Creds}
	if err := t.Validate(); err != nil {
		return nil, "", err
	}

	if !t.proxied() {
		return nil, "", fmt.Errorf("node %s is the node read through: read it directly", node)
	}

	o = o.withDefaults()

	actx, cancel := o.attemptContext(ctx)
	defer cancel()

	// The connection is via's; this Conn only names node, so that each call
	// carries node's metadata (nodeContext), and is never closed.
	conn := &Conn{Mode: ModeSecure, client: via.client, target: t}

	resp, err := conn.client.Version(conn.nodeContext(actx))
	if err != nil {
		return nil, "", readThroughFailed(node, via.target.Node, fmt.Errorf("reading the node's Talos version: %s", statusMessage(err)))
	}

	if len(resp.GetMessages()) > 0 {
		conn.version = resp.GetMessages()[0].GetVersion().GetTag()
	}

	nc, err := readActiveConfig(actx, conn)
	if err != nil {
		return nil, "", readThroughFailed(node, via.target.Node, err)
	}

	return nc, conn.version, nil
}

// readThroughFailed names node once in err, a read of node through via
// (onNode: the parse error of its configuration names it already).
func readThroughFailed(node, via string, err error) error {
	return fmt.Errorf("%w (read through node %s)", onNode(node, err), via)
}
