package talos

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cosi-project/runtime/pkg/state"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/api/storage"
	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"
)

// nodeServers is what listens for one boot of a node.
type nodeServers struct {
	state       state.State // the node's resources
	events      *eventBuffer
	logs        *bootLogs
	maintenance *grpc.Server
	maintConns  *connSet // connections to the maintenance server
	apid        *apid
	listener    net.Listener
	vips        map[netip.Addr]net.Listener

	pubMu sync.Mutex // one publish at a time

	// configs last published (guarded by sim.mu)
	pubActive     config.Provider
	pubPersistent []byte
	pubConfigs    bool
}

// newBootResources gives a boot its fresh resource state.
func (n *Node) newBootResources() error {
	st, err := newResourceState()
	if err != nil {
		return err
	}

	n.sim.mu.Lock()
	n.servers = &nodeServers{state: st, events: newEventBuffer(), logs: newBootLogs(n.image), vips: map[netip.Addr]net.Listener{}}
	n.sim.mu.Unlock()

	n.publish()

	return nil
}

// startMaintenance serves the maintenance API: TLS with a certificate from a
// throwaway CA, no client certificates, every caller a reader
// (internal/app/machined/pkg/controllers/runtime/maintenance_service.go).
func (n *Node) startMaintenance() error {
	s := n.sim

	s.mu.Lock()
	addr, hostname, srvs := n.addr, n.hostname, n.servers
	s.mu.Unlock()

	if !addr.IsValid() || srvs == nil {
		return nil
	}

	cert, err := maintenanceCert(addr, hostname)
	if err != nil {
		return err
	}

	srv := grpc.NewServer(
		grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})),
		grpc.ChainUnaryInterceptor(n.pauseUnary, s.faultUnary, injectUnary(readerOnly)),
		grpc.ChainStreamInterceptor(n.pauseStream, s.faultStream, injectStream(readerOnly)),
	)
	machine.RegisterMachineServiceServer(srv, &maintenanceServer{node: n})
	storage.RegisterStorageServiceServer(srv, &storageServer{node: n})
	registerResources(srv, srvs.state)

	l, err := n.listen(addr)
	if err != nil {
		srv.Stop()

		return fmt.Errorf("listen on %s: %w", s.apiEndpoint(addr), err)
	}

	conns := newConnSet()
	l = conns.listen(l)

	s.mu.Lock()
	if n.servers != srvs {
		// the boot ended meanwhile: its servers were stopped without this one
		s.mu.Unlock()
		l.Close() //nolint:errcheck
		srv.Stop()

		return nil
	}
	srvs.maintenance, srvs.maintConns, srvs.listener = srv, conns, l
	s.mu.Unlock()

	go srv.Serve(l) //nolint:errcheck

	n.logf("maintenance mode: apply a configuration with talosctl apply-config --insecure", "endpoint", s.apiEndpoint(addr))

	return nil
}

// listen opens the node's Talos API port. A node owns its address (a
// duplicate is refused at boot, see byAddr), so "address in use" can only be
// a listener of the node's previous boot or of a stale start that is still
// being closed by another goroutine: wait a moment for it instead of failing
// the boot, which a real node, one process per machine, never sees.
func (n *Node) listen(addr netip.Addr) (net.Listener, error) {
	endpoint := n.sim.apiEndpoint(addr)
	deadline := time.Now().Add(2 * time.Second)

	for {
		l, err := net.Listen("tcp", endpoint)
		if err == nil || !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) || n.ctx.Err() != nil {
			return l, err
		}

		time.Sleep(20 * time.Millisecond)
	}
}

// startAPI starts apid on a control plane, which issues its own certificate
// from the OS CA in its config.
func (n *Node) startAPI() error {
	n.sim.mu.Lock()
	cfg := n.active
	n.sim.mu.Unlock()

	if cfg == nil {
		return nil
	}

	return n.startAPIWithIssuer(cfg)
}

// startAPIWithIssuer starts apid with certificates signed by the OS CA key in
// issuerCfg (the node's own config on control planes, trustd's on workers).
func (n *Node) startAPIWithIssuer(issuerCfg config.Provider) error {
	s := n.sim

	s.mu.Lock()
	addr, hostname, cfg, srvs := n.addr, n.hostname, n.active, n.servers
	s.mu.Unlock()

	if !addr.IsValid() || cfg == nil || srvs == nil || srvs.apid != nil {
		return nil
	}

	issuer, err := newOSIssuer(issuerCfg.Machine().Security().IssuingCA())
	if err != nil {
		return err
	}

	addrs := slices.Concat([]netip.Addr{addr, netip.MustParseAddr("127.0.0.1")}, configVIPs(cfg))

	var names []string

	for _, san := range cfg.Machine().Security().CertSANs() {
		if a, err := netip.ParseAddr(san); err == nil {
			addrs = append(addrs, a)
		} else {
			names = append(names, san)
		}
	}

	serverCert, err := issuer.serverCert(hostname, addrs, append(names, "localhost"))
	if err != nil {
		return err
	}

	clientCert, err := issuer.clientCert()
	if err != nil {
		return err
	}

	cas := [][]byte{cfg.Machine().Security().IssuingCA().Crt}
	for _, ca := range cfg.Machine().Security().AcceptedCAs() {
		cas = append(cas, ca.Crt)
	}

	a, err := newAPID(n, apidCerts{server: serverCert, client: clientCert, clientCAs: cas})
	if err != nil {
		return err
	}

	l, err := n.listen(addr)
	if err != nil {
		a.stop(0)

		return fmt.Errorf("listen on %s: %w", s.apiEndpoint(addr), err)
	}

	s.mu.Lock()
	if n.servers != srvs || srvs.apid != nil {
		s.mu.Unlock()
		l.Close() //nolint:errcheck
		a.stop(0)

		return nil
	}

	srvs.apid, srvs.listener = a, l
	s.mu.Unlock()

	a.serve(l)
	n.publish()
	s.nudge()

	return nil
}

// takeVIP makes the VIP answer: the Talos API and, through the cluster's
// kube server, the Kubernetes API.
func (n *Node) takeVIP(vip netip.Addr) {
	s := n.sim

	s.mu.Lock()
	srvs := n.servers
	s.mu.Unlock()

	n.logf("this node holds the VIP now", "vip", vip.String())

	if srvs == nil || srvs.apid == nil {
		return
	}

	l, err := net.Listen("tcp", s.apiEndpoint(vip))
	if err != nil {
		n.logf("VIP cannot listen", "vip", vip.String(), "error", err)

		return
	}

	s.mu.Lock()
	if n.servers != srvs {
		s.mu.Unlock()
		l.Close() //nolint:errcheck

		return
	}

	srvs.vips[vip] = l
	s.mu.Unlock()

	srvs.apid.serve(l)
}

func (n *Node) dropVIP(vip netip.Addr) {
	s := n.sim

	s.mu.Lock()

	var l net.Listener
	if n.servers != nil {
		l = n.servers.vips[vip]
		delete(n.servers.vips, vip)
	}
	s.mu.Unlock()

	if l != nil {
		l.Close() //nolint:errcheck
	}
}

// stopServers stops whatever listens for the node (maintenance API, apid):
// gracefully when the OS stops them (reboot, shutdown), at once when the VM
// lost power.
func (n *Node) stopServers() {
	s := n.sim

	grace := n.stopGrace()

	s.mu.Lock()
	srvs := n.servers
	n.servers = nil
	s.mu.Unlock()

	if srvs == nil {
		return
	}

	for _, l := range srvs.vips {
		l.Close() //nolint:errcheck
	}

	srvs.events.close()
	srvs.logs.close()

	if srvs.maintenance != nil {
		stopGRPC(srvs.maintenance, srvs.maintConns, grace)
	}

	if srvs.apid != nil {
		srvs.apid.stop(grace)
	}

	if srvs.listener != nil {
		srvs.listener.Close() //nolint:errcheck
	}
}

// stopMaintenance stops the maintenance service only, for a boot that
// goes on configured.
func (n *Node) stopMaintenance() {
	s := n.sim

	grace := n.stopGrace()

	s.mu.Lock()
	srvs := n.servers

	var (
		srv   *grpc.Server
		conns *connSet
		l     net.Listener
	)

	if srvs != nil {
		srv, conns, l = srvs.maintenance, srvs.maintConns, srvs.listener
		srvs.maintenance, srvs.maintConns, srvs.listener = nil, nil, nil
	}
	s.mu.Unlock()

	if srv != nil {
		stopGRPC(srv, conns, grace)
	}

	if l != nil {
		l.Close() //nolint:errcheck
	}
}

// publish writes the node's current state into its resources.
func (n *Node) publish() {
	s := n.sim

	s.mu.Lock()
	srvs := n.servers
	s.mu.Unlock()

	if srvs == nil {
		return
	}

	srvs.pubMu.Lock()
	defer srvs.pubMu.Unlock()

	s.mu.Lock()

	snap := resourceSnapshot{
		stage:      machineStage(n.phase),
		hostname:   n.hostname,
		nics:       n.machine.NICs,
		machine:    n.machine,
		image:      n.image,
		extensions: n.extensions,
		active:     n.active,
		members:    s.discoveryMembers(n),
		nodename:   strings.ToLower(n.hostname),
		bootedAt:   n.bootedAt,
		// As machineReadiness: the static pods run once the apiserver answered.
		staticPodsUp: n.phase == PhaseRunning && !n.apiReadyAt.IsZero(),
	}

	if n.addr.IsValid() {
		snap.addr = netip.PrefixFrom(n.addr, 32)

		if ci := n.machine.CloudInit; ci != nil && len(ci.Interfaces) > 0 {
			snap.addr = netip.PrefixFrom(n.addr, ci.Interfaces[0].Address.Bits())
			snap.gateway = ci.Interfaces[0].Gateway
		}
	}

	snap.devices, _ = linuxDevices(n.machine.Disks)

	if n.ps != nil {
		for _, d := range snap.devices {
			if d.Name == n.ps.disk {
				snap.systemDisk = d.DevName
			}
		}
	}

	if n.active != nil {
		snap.services = s.nodeServices(n)
		snap.ready, snap.unmet = s.machineReadiness(n, snap.services)
	}

	var persisted []byte
	if n.ps != nil {
		persisted = n.ps.config
	}

	if !srvs.pubConfigs || srvs.pubActive != n.active || !bytes.Equal(srvs.pubPersistent, persisted) {
		snap.configs = &machineConfigs{active: n.active}

		if persisted != nil {
			if cfg, err := loadConfig(persisted); err == nil {
				snap.configs.persistent = cfg
			}
		}

		srvs.pubConfigs, srvs.pubActive, srvs.pubPersistent = true, n.active, persisted
	}

	if n.etcd != nil {
		snap.etcdMember = n.etcd.id
	}

	n.maybeFetchManifests()
	snap.urlManifests = n.renderedURLManifests()
	s.mu.Unlock()

	snap.events, snap.logs = srvs.events, srvs.logs

	if err := publishResources(srvs.state, snap); err != nil {
		n.logf("updating node resources failed", "error", err)
	}
}

func machineStage(p Phase) runtime.MachineStage {
	switch p {
	case PhaseMaintenance:
		return runtime.MachineStageMaintenance
	case PhaseInstalling:
		return runtime.MachineStageInstalling
	case PhaseRunning:
		return runtime.MachineStageRunning
	case PhaseRebooting:
		return runtime.MachineStageRebooting
	case PhaseUpgrading:
		return runtime.MachineStageUpgrading
	case PhaseResetting:
		return runtime.MachineStageResetting
	case PhaseShuttingDown:
		return runtime.MachineStageShuttingDown
	default:
		return runtime.MachineStageBooting
	}
}

// serverGrace is how long in-flight calls may finish when Talos stops its API
// servers (factory.ServerGracefulStop).
const serverGrace = 5 * time.Second

// stopGrace is how long the node's API servers let in-flight calls finish:
// serverGrace when the OS stops them, none when the VM lost power.
func (n *Node) stopGrace() time.Duration {
	if n.ctx.Err() != nil {
		return 0
	}

	return serverGrace
}
