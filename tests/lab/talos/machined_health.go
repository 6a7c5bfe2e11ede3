package talos

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/siderolabs/crypto/x509"
	"google.golang.org/grpc"

	clusterapi "github.com/siderolabs/talos/pkg/machinery/api/cluster"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"
	"github.com/siderolabs/talos/pkg/machinery/config/machine"
	clusterres "github.com/siderolabs/talos/pkg/machinery/resources/cluster"
	"github.com/siderolabs/talos/pkg/machinery/role"
)

// clusterService is machined's ClusterService: the server-side `talosctl
// health` (internal/app/machined/internal/server/v1alpha1/v1alpha1_cluster.go).
// Like machined it is a client of the cluster: it talks to the nodes through
// its own apid with a short-lived certificate carrying the caller's roles, and
// to Kubernetes with the kubeconfig the Talos API hands out, and runs Talos's
// default checks (pkg/cluster/check, healthchecks.go) on what they answer.
type clusterService struct {
	clusterapi.UnimplementedClusterServiceServer

	node *Node
}

func registerClusterService(srv *grpc.Server, n *Node) {
	clusterapi.RegisterClusterServiceServer(srv, &clusterService{node: n})
}

func (c *clusterService) HealthCheck(in *clusterapi.HealthCheckRequest, srv clusterapi.ClusterService_HealthCheckServer) error {
	m := &machined{node: c.node}

	cfg, err := m.current()
	if err != nil {
		return err
	}

	// machinehelper.CheckControlplane.
	if err := checkControlplane(cfg, "cluster health check"); err != nil {
		return err
	}

	cli, err := c.localClient(srv.Context(), cfg.Machine().Security().IssuingCA(), rolesFrom(srv.Context()))
	if err != nil {
		return err
	}
	defer cli.Close() //nolint:errcheck

	ctx, cancel := context.WithTimeout(srv.Context(), in.GetWaitTimeout().AsDuration())
	defer cancel()

	hc := &healthCluster{cli: cli, forceEndpoint: in.GetClusterInfo().GetForceEndpoint()}
	defer hc.close()

	if err := c.clusterInfo(ctx, in, hc); err != nil {
		return err
	}

	ips := make([]string, 0, len(hc.nodes))
	for _, n := range hc.nodes {
		ips = append(ips, n.internal.String())
	}

	if err := srv.Send(&clusterapi.HealthCheckProgress{Message: fmt.Sprintf("discovered nodes: %q", ips)}); err != nil {
		return err
	}

	return waitChecks(ctx, hc, defaultClusterChecks(), &healthReporter{srv: srv})
}

// localClient is cluster.NewLocalClientProvider: an admin certificate from
// the OS CA with the incoming call's roles, valid 10 minutes, for this node's
// own apid.
func (c *clusterService) localClient(ctx context.Context, ca *x509.PEMEncodedCertificateAndKey, roles role.Set) (*client.Client, error) {
	kp, err := secrets.NewAdminCertificateAndKey(time.Now(), ca, roles, 10*time.Minute)
	if err != nil {
		return nil, fmt.Errorf("failed to generate client certificate: %w", err)
	}

	cert, err := tls.X509KeyPair(kp.Crt, kp.Key)
	if err != nil {
		return nil, err
	}

	pool, err := certPool(ca.Crt)
	if err != nil {
		return nil, err
	}

	c.node.sim.mu.Lock()
	addr := c.node.addr
	c.node.sim.mu.Unlock()

	return client.New(ctx,
		client.WithEndpoints(netip.AddrPortFrom(addr, uint16(c.node.sim.opts.APIPort)).String()),
		client.WithTLSConfig(&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}),
	)
}

// clusterInfo is buildClusterInfo: the nodes the request names, else the
// discovered members, else the Kubernetes nodes.
func (c *clusterService) clusterInfo(ctx context.Context, in *clusterapi.HealthCheckRequest, hc *healthCluster) error {
	cps, workers := in.GetClusterInfo().GetControlPlaneNodes(), in.GetClusterInfo().GetWorkerNodes()

	if len(cps) > 0 || len(workers) > 0 {
		for typ, ips := range map[machine.Type][]string{machine.TypeControlPlane: cps, machine.TypeWorker: workers} {
			for _, ip := range ips {
				a, err := netip.ParseAddr(ip)
				if err != nil {
					return err
				}

				hc.add(typ, healthNode{internal: a, ips: []netip.Addr{a}})
			}
		}

		return nil
	}

	c.node.sim.mu.Lock()
	st := c.node.servers.state
	c.node.sim.mu.Unlock()

	members, err := safe.StateListAll[*clusterres.Member](ctx, st)
	if err == nil && members.Len() > 0 {
		for m := range members.All() {
			spec := m.TypedSpec()
			if len(spec.Addresses) == 0 {
				return fmt.Errorf("no IP address found for member: %s", m.Metadata().ID())
			}

			hc.add(spec.MachineType, healthNode{internal: spec.Addresses[0], ips: spec.Addresses})
		}

		return nil
	}

	nodes, err := hc.k8sNodes(ctx)
	if err != nil {
		return err
	}

	for _, n := range nodes {
		typ := machine.TypeWorker
		if _, ok := n.Metadata.Labels["node-role.kubernetes.io/control-plane"]; ok {
			typ = machine.TypeControlPlane
		}

		hc.add(typ, n.info())
	}

	return nil
}

// healthReporter sends each new status line (v1alpha1_cluster.go).
type healthReporter struct {
	srv      clusterapi.ClusterService_HealthCheckServer
	lastLine string
}

func (r *healthReporter) update(c *pollCondition) {
	line := "waiting for " + c.String()
	if line != r.lastLine {
		r.srv.Send(&clusterapi.HealthCheckProgress{Message: strings.TrimSpace(line)}) //nolint:errcheck

		r.lastLine = line
	}
}

// errSkip is conditions.ErrSkipAssertion.
var errSkip = fmt.Errorf("SKIP")

// pollCondition is pkg/conditions' PollingCondition: the assertion runs every
// interval (each run bounded by it) until it passes or skips.
type pollCondition struct {
	desc     string
	interval time.Duration
	assert   func(ctx context.Context) error

	mu      sync.Mutex
	lastErr error
	set     bool
}

func (p *pollCondition) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()

	switch {
	case !p.set:
		return p.desc + ": ..."
	case p.lastErr == nil:
		return p.desc + ": OK"
	default:
		return p.desc + ": " + p.lastErr.Error()
	}
}

func (p *pollCondition) wait(ctx context.Context) error {
	ticker := time.NewTicker(p.interval)
	defer ticker.Stop()

	for {
		runCtx, cancel := context.WithTimeout(ctx, p.interval)
		err := p.assert(runCtx)

		cancel()

		p.mu.Lock()
		p.lastErr, p.set = err, true
		p.mu.Unlock()

		if err == nil || err == errSkip { //nolint:errorlint // conditions compares the sentinel itself
			return nil
		}

		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		}
	}
}

// waitChecks is check.Wait: the checks in order, each reported every 100 ms
// while it runs; the first that fails ends the health check.
func waitChecks(ctx context.Context, hc *healthCluster, checks []healthCheck, r *healthReporter) error {
	for _, check := range checks {
		if err := ctx.Err(); err != nil {
			return err
		}

		c := check(hc)
		errCh := make(chan error, 1)

		go func() { errCh <- c.wait(ctx) }()

		ticker := time.NewTicker(100 * time.Millisecond)
		r.update(c)

		var err error

	poll:
		for {
			select {
			case err = <-errCh:
				break poll
			case <-ticker.C:
				r.update(c)
			}
		}

		ticker.Stop()
		r.update(c)

		if err != nil {
			return err
		}
	}

	return nil
}
