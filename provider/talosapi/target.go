package talosapi

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/constants"
)

// Target names a node and how to reach it.
type Target struct {
	// Node is the address of the node the operation is about: an IP or host
	// name, optionally with a port (default 50000, apid's port).
	Node string
	// Endpoints are the Talos API endpoints dialled for mTLS calls. Empty
	// means the node itself. When an endpoint is another node, apid on that
	// endpoint proxies the call to Node (talosctl's --endpoints/--nodes).
	// Maintenance mode has no proxy, so maintenance calls always dial Node.
	Endpoints []string
	// Creds are the cluster's client credentials; nil when only maintenance
	// mode can be used (a fresh node and no configuration known).
	Creds *Credentials
	// Configured says the caller knows the node was configured (a running
	// node of an existing cluster): Connect then makes the mTLS call at once,
	// one TLS handshake, and probes which server answers (a second one) only
	// when that call fails. Without it the probe comes first, which a node
	// in maintenance mode needs. Ignored for a node reached through other
	// endpoints (their proxy is tried only when the node itself does not
	// answer) and without Creds.
	Configured bool
}

// nodeAddr is the node's host:port.
func (t Target) nodeAddr() (string, error) {
	return hostPort(t.Node)
}

// nodeHost is the node's address without port, as apid expects it in the
// "node" metadata when proxying.
func (t Target) nodeHost() string {
	return hostOf(t.Node)
}

// endpointAddrs are the mTLS endpoints as host:port.
func (t Target) endpointAddrs() ([]string, error) {
	if len(t.Endpoints) == 0 {
		a, err := t.nodeAddr()

		return []string{a}, err
	}

	out := make([]string, 0, len(t.Endpoints))

	for _, e := range t.Endpoints {
		a, err := hostPort(e)
		if err != nil {
			return nil, err
		}

		out = append(out, a)
	}

	return out, nil
}

// proxied reports whether mTLS calls reach the node through another endpoint.
func (t Target) proxied() bool {
	if len(t.Endpoints) == 0 {
		return false
	}

	node, err := t.nodeAddr()
	if err != nil {
		return false
	}

	for _, e := range t.Endpoints {
		if a, err := hostPort(e); err == nil && a == node {
			return false
		}
	}

	return true
}

// Validate checks the addresses without contacting anything.
func (t Target) Validate() error {
	if strings.TrimSpace(t.Node) == "" {
		return fmt.Errorf("node address is empty: set the node's IP address or host name")
	}

	if _, err := t.nodeAddr(); err != nil {
		return err
	}

	_, err := t.endpointAddrs()

	return err
}

// hostPort normalises "host", "host:port", "[v6]:port" and "v6" to host:port
// with apid's port as the default.
func hostPort(addr string) (string, error) {
	addr = strings.TrimSpace(addr)
	addr = strings.TrimPrefix(addr, "https://")

	if addr == "" {
		return "", fmt.Errorf("empty address")
	}

	if h, p, err := net.SplitHostPort(addr); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return "", fmt.Errorf("address %q: port %q is not a number between 1 and 65535", addr, p)
		}

		if h == "" {
			return "", fmt.Errorf("address %q has no host", addr)
		}

		return net.JoinHostPort(h, p), nil
	}

	host := strings.Trim(addr, "[]")
	if strings.ContainsAny(host, "/ ") {
		return "", fmt.Errorf("address %q is not a host name or IP address", addr)
	}

	return net.JoinHostPort(host, strconv.Itoa(constants.ApidPort)), nil
}
