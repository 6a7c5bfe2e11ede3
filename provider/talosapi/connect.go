package talosapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// Mode is the kind of API server a node answers with.
type Mode string

const (
	// ModeMaintenance: a node without configuration (booted from the ISO or
	// reset). Self-signed certificate, no client authentication, and only
	// ApplyConfiguration, Disks, GenerateConfiguration and read-only
	// resources are served (siderolabs/talos internal/app/maintenance/server.go).
	ModeMaintenance Mode = "maintenance"
	// ModeSecure: a configured node; apid requires a client certificate
	// signed by the cluster's OS CA.
	ModeSecure Mode = "secure"
)

// Conn is an open connection to one node in a known mode.
type Conn struct {
	Mode   Mode
	client *client.Client
	target Target
	// disks are the device names a maintenance-mode node reported.
	disks []string
	// version is the Talos version tag a configured node reported.
	version string
}

// Version is the Talos version a configured node reported when connected.
func (c *Conn) Version() string { return c.version }

// Close releases the connection.
func (c *Conn) Close() error {
	if c == nil || c.client == nil {
		return nil
	}

	return c.client.Close()
}

// Client is machinery's client, for calls this package does not wrap.
func (c *Conn) Client() *client.Client { return c.client }

// nodeContext adds the "node" metadata when the call goes through another
// endpoint's apid proxy (machinery client.WithNode, talosctl --nodes).
func (c *Conn) nodeContext(ctx context.Context) context.Context {
	if c.Mode == ModeSecure && c.target.proxied() {
		return client.WithNode(ctx, c.target.nodeHost())
	}

	return ctx
}

// dialOptions make a dead connection fail fast and reconnect quickly after
// a reboot, instead of grpc-go's default backoff of up to two minutes.
func dialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, MaxDelay: 2 * time.Second},
			MinConnectTimeout: 5 * time.Second,
		}),
	}
}

// newMaintenanceClient dials the node directly with TLS but no verification:
// maintenance mode serves a self-signed certificate and authenticates no
// one (talosctl --insecure: cmd/talosctl/pkg/talos/global/client.go
// WithClientMaintenance). Secrets sent this way are protected from passive
// listeners only; that is inherent to Talos maintenance mode.
func newMaintenanceClient(ctx context.Context, t Target) (*client.Client, error) {
	addr, err := t.nodeAddr()
	if err != nil {
		return nil, err
	}

	return client.New(ctx,
		client.WithTLSConfig(&tls.Config{InsecureSkipVerify: true}), //nolint:gosec // maintenance mode has no verifiable identity
		client.WithEndpoints(addr),
		client.WithDefaultGRPCDialOptions(),
		client.WithGRPCDialOptions(dialOptions()...),
	)
}

// newSecureClient dials the endpoints with the cluster's client certificate.
func newSecureClient(ctx context.Context, t Target, extra ...grpc.DialOption) (*client.Client, error) {
	tlsCfg, err := t.Creds.tlsConfig()
	if err != nil {
		return nil, err
	}

	eps, err := t.endpointAddrs()
	if err != nil {
		return nil, err
	}

	return client.New(ctx,
		client.WithTLSConfig(tlsCfg),
		client.WithEndpoints(eps...),
		client.WithDefaultGRPCDialOptions(),
		client.WithGRPCDialOptions(dialOptions()...),
		client.WithGRPCDialOptions(extra...),
	)
}

// probeMaintenance asks the node for its disks, which maintenance mode
// serves to anyone (Version is refused there: maintenance/server.go).
func probeMaintenance(ctx context.Context, o Options, t Target) (*Conn, error) {
	c, err := newMaintenanceClient(ctx, t)
	if err != nil {
		return nil, stop(err)
	}

	actx, cancel := o.attemptContext(ctx)
	defer cancel()

	resp, err := c.Disks(actx)
	if err != nil {
		c.Close() //nolint:errcheck

		return nil, err
	}

	conn := &Conn{Mode: ModeMaintenance, client: c, target: t}

	for _, m := range resp.GetMessages() {
		for _, d := range m.GetDisks() {
			conn.disks = append(conn.disks, d.GetDeviceName())
		}
	}

	return conn, nil
}

// probeSecure asks for the Talos version over mTLS. A non-nil w learns
// whether the node answered at all.
func probeSecure(ctx context.Context, o Options, t Target, w *answerWatch) (*Conn, string, error) {
	var extra []grpc.DialOption
	if w != nil {
		extra = append(extra, w.dialOption())
	}

	c, err := newSecureClient(ctx, t, extra...)
	if err != nil {
		return nil, "", stop(err)
	}

	conn := &Conn{Mode: ModeSecure, client: c, target: t}

	actx, cancel := o.attemptContext(ctx)
	defer cancel()

	resp, err := c.Version(conn.nodeContext(actx))
	if err != nil {
		c.Close() //nolint:errcheck

		return nil, "", err
	}

	if len(resp.GetMessages()) > 0 {
		conn.version = resp.GetMessages()[0].GetVersion().GetTag()
	}

	return conn, conn.version, nil
}

// dialOnce makes one attempt to reach the node, in the mode it answers.
// A TLS handshake tells the two servers apart (apid asks for a client
// certificate, maintenance mode does not); a call the server serves then
// confirms it: Disks in maintenance mode, Version over mTLS. A target
// known to be configured (Target.Configured) gets the mTLS call first.
func dialOnce(ctx context.Context, o Options, t Target) (*Conn, string, error) {
	conn, state, err := dialNode(ctx, o, t)
	if err == nil {
		o.machineAnswered(t)
	}

	return conn, state, err
}

// dialNode is dialOnce without telling o.Machines of an answer.
func dialNode(ctx context.Context, o Options, t Target) (*Conn, string, error) {
	addr, err := t.nodeAddr()
	if err != nil {
		return nil, "", stop(err)
	}

	var (
		hello tlsHello
		hErr  error
	)

	if t.Configured && t.Creds != nil && !t.proxied() {
		// Most likely what the probe would find; anything else (a node
		// reset to maintenance mode, another cluster's node) fails this
		// call, and the probe below says which it is. A node that sent
		// nothing back is not probed: that would only wait again.
		w := &answerWatch{}
		start := time.Now()

		conn, tag, err := probeSecure(ctx, o, t, w)
		if err == nil {
			return conn, "Talos " + tag + " (mTLS)", nil
		}

		if !w.answered.Load() {
			hErr = noAnswer(w.lastDialErr(), time.Since(start))
		}
	}

	if hErr == nil {
		hctx, cancel := o.attemptContext(ctx)
		start := time.Now()
		hello, hErr = helloTLS(hctx, addr)

		if hErr != nil && hctx.Err() != nil {
			hErr = noAnswer(nil, time.Since(start))
		}

		cancel()
	}

	if hErr != nil {
		// Nothing answers at the address: rebooting, or its machine is off.
		if err := o.machineDown(ctx, t); err != nil {
			return nil, "", err
		}
	}

	switch {
	case hErr != nil && t.proxied() && t.Creds != nil:
		// The node itself may be unreachable from here but reachable
		// through the endpoints' apid proxy: try that.
		conn, tag, err := probeSecure(ctx, o, t, nil)
		if err != nil {
			return nil, "", fmt.Errorf("node %s: %s; through endpoints %v: %s", addr, hErr, t.Endpoints, statusMessage(err))
		}

		return conn, "Talos " + tag + " (mTLS through " + conn.client.GetEndpoints()[0] + ")", nil
	case hErr != nil:
		return nil, "", fmt.Errorf("TLS connection to %s: %w", addr, hErr)
	case !hello.wantsClientCert:
		conn, err := probeMaintenance(ctx, o, t)
		if err != nil {
			return nil, "maintenance-mode TLS listener", fmt.Errorf("maintenance mode (insecure) Disks call: %s", statusMessage(err))
		}

		return conn, "maintenance mode", nil
	case t.Creds == nil:
		return nil, "configured node (asks for a client certificate)",
			stop(fmt.Errorf("node %s is configured and requires mTLS, but no client configuration was given: pass the cluster's client configuration", t.Node))
	}

	if err := verifyChain(hello.chain, t.Creds.CA); err != nil && !t.proxied() {
		// Retried: a node being reset and reinstalled changes identity.
		return nil, "configured node of another cluster", fmt.Errorf("node %s asks for a client certificate but %s: is the node part of another cluster, or is the client configuration from another cluster?", addr, err)
	}

	conn, tag, err := probeSecure(ctx, o, t, nil)
	if err != nil {
		var se stopError
		if errors.As(err, &se) {
			return nil, "", err
		}

		if classify(err) == failPermanent {
			// apid answered and refused: a wrong role or a broken proxy route.
			return nil, "", stop(fmt.Errorf("node %s refused the mTLS call: %s", t.Node, statusMessage(err)))
		}

		return nil, "configured node", fmt.Errorf("mTLS Version call: %s", statusMessage(err))
	}

	return conn, "Talos " + tag + " (mTLS)", nil
}

// Connect reaches the node in whatever mode it answers, retrying while it
// does not answer until ctx ends. A node that never answers is a *WaitError
// naming the address and what was tried.
func Connect(ctx context.Context, t Target, o Options) (*Conn, error) {
	o = o.withDefaults()

	if err := t.Validate(); err != nil {
		return nil, err
	}

	addr, _ := t.nodeAddr() //nolint:errcheck // validated

	var conn *Conn

	err := o.poll(ctx, fmt.Sprintf("node %s to answer on the Talos API", addr), func(ctx context.Context) (bool, string, error) {
		c, state, err := dialOnce(ctx, o, t)
		if err != nil {
			return false, state, err
		}

		conn = c

		return true, state, nil
	})

	return conn, err
}

// ConnectSecure reaches a configured node over mTLS, retrying while it does
// not answer. A node that answers in maintenance mode is an error at once:
// it has no configuration yet.
func ConnectSecure(ctx context.Context, t Target, o Options) (*Conn, error) {
	conn, err := Connect(ctx, t, o)
	if err != nil {
		return nil, err
	}

	if conn.Mode == ModeMaintenance {
		conn.Close() //nolint:errcheck

		return nil, fmt.Errorf("node %s is in maintenance mode (no machine configuration applied): apply a configuration to it first", t.Node)
	}

	return conn, nil
}

// noAnswer says why nothing came back from a node: the dial's error
// (refused, no route, i/o timeout) if it failed, else how long the node
// stayed silent ("context deadline exceeded" would name no cause).
func noAnswer(dialErr error, waited time.Duration) error {
	if dialErr != nil {
		return dialErr
	}

	return fmt.Errorf("no answer within %s: the node is off, still booting, or not reachable from here", roundDuration(waited))
}
