package talos

import (
	"crypto/rand"
	stdx509 "crypto/x509"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/siderolabs/crypto/x509"
	"github.com/siderolabs/talos/pkg/machinery/config"
)

// A control plane's own etcd member: a real etcd process
// (the lab's .tools/bin/etcd-<version>, FindKubeTools) listening on the
// node's own loopback address, 2379 for clients and 2380 for peers, as
// Talos's etcd service listens on the node's address
// (internal/app/machined/pkg/system/services/etcd.go argsForControlPlane),
// with mutual TLS from the cluster's etcd CA. Its data directory lives as
// long as the node's EPHEMERAL partition: kept across reboots and power
// cycles, removed by a reset that wipes it or by leaving the cluster.

// Timing flags for every member. Talos sets none (siderolabs/talos
// internal/app/machined/pkg/system/services/etcd.go argsForControlPlane),
// so real members run etcd's defaults: heartbeat 100 ms, election timeout
// 1 s. The lab keeps them at time scale 1 and above, the realistic timing
// the benchmark measures: etcd's request timeout follows the election
// timeout (5 s plus twice it, server/config/config.go ReqTimeout), and a
// joining member waits it out whenever its first publish is lost, which
// etcd v3.6 makes common (below). Faster scales are tests on two cores
// shared with builds (load reached 63), where a member not scheduled for a
// second starts an election: five times the defaults keep elections for
// real failures (etcd's Documentation/tuning: election timeout at least 5×
// the heartbeat).
//
// The lost publish: etcd v3.6 snapshots every 100 applied entries and then
// compacts its raft log (server.go triggerSnapshot, memorySnapshotCount,
// compactRaftLog), so a member joining any but the newest cluster catches
// up from a snapshot, and applying it closes every peer stream
// (applySnapshot: transport.RemoveAllPeers). The member's publish of its
// name and client URLs, already sent, is then lost, and it serves no client
// until the retry after the request timeout (publishV3: "request timed out,
// possibly due to connection lost"): 7 s with Talos's flags, 15 s with the
// lab's slow ones.
const (
	etcdHeartbeatMillis     = 100
	etcdElectionMillis      = 1000
	etcdSlowHeartbeatMillis = 5 * etcdHeartbeatMillis
	etcdSlowElectionMillis  = 5 * etcdElectionMillis
)

// etcdTimingFlags are a member's heartbeat and election flags at the lab's
// time scale.
func (s *Sim) etcdTimingFlags() []string {
	hb, el := etcdSlowHeartbeatMillis, etcdSlowElectionMillis
	if s.opts.TimeScale >= 1 {
		hb, el = etcdHeartbeatMillis, etcdElectionMillis
	}

	return []string{fmt.Sprintf("--heartbeat-interval=%d", hb), fmt.Sprintf("--election-timeout=%d", el)}
}

type etcdProcess struct {
	p    *proc
	dir  string // data directory
	name string
	addr netip.Addr
}

func etcdClientURL(addr netip.Addr) string { return "https://" + joinPort(addr.String(), 2379) }
func etcdPeerURL(addr netip.Addr) string   { return "https://" + joinPort(addr.String(), 2380) }

// newEtcdDataDir names a fresh data directory for a member.
func (s *Sim) newEtcdDataDir() string {
	b := make([]byte, 8)
	rand.Read(b) //nolint:errcheck // never fails

	return filepath.Join(s.workDir(), "etcd-"+hex.EncodeToString(b))
}

// etcdKeyPair issues a certificate from the cluster's etcd CA: Talos's
// etcd peer/server certificates name the node's addresses and hostname
// (internal/app/machined/pkg/controllers/secrets/etcd.go); the admin client
// certificate names nothing.
func etcdKeyPair(cfg config.Provider, cn string, ips []netip.Addr, host string) (*x509.PEMEncodedCertificateAndKey, error) {
	ca, err := x509.NewCertificateAuthorityFromCertificateAndKey(cfg.Cluster().Etcd().CA())
	if err != nil {
		return nil, fmt.Errorf("cluster.etcd.ca: %w", err)
	}

	opts := []x509.Option{
		x509.CommonName(cn),
		x509.NotAfter(time.Now().Add(certLifetime)),
		x509.KeyUsage(stdx509.KeyUsageDigitalSignature | stdx509.KeyUsageKeyEncipherment),
		x509.ExtKeyUsage([]stdx509.ExtKeyUsage{stdx509.ExtKeyUsageServerAuth, stdx509.ExtKeyUsageClientAuth}),
	}

	if len(ips) > 0 {
		opts = append(opts, x509.IPAddresses(ipList(ips)), x509.DNSNames([]string{"localhost", host}))
	}

	kp, err := x509.NewKeyPair(ca, opts...)
	if err != nil {
		return nil, err
	}

	return x509.NewCertificateAndKeyFromKeyPair(kp), nil
}

// startEtcdMember starts a member with Talos's flags: state "new" with a
// cluster of one at bootstrap, "existing" with the add's member list on a
// join (etcd ignores both once the data directory holds a member).
func (s *Sim) startEtcdMember(cfg config.Provider, dir, name string, addr netip.Addr, state, initial string) (*etcdProcess, error) {
	if dir == "" {
		// etcd's default would be ./<name>.etcd in the test's working directory.
		return nil, fmt.Errorf("etcd member %s has no data directory recorded", name)
	}

	tools, err := FindKubeTools()
	if err != nil {
		return nil, err
	}

	pki := dir + ".pki"
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return nil, err
	}

	kp, err := etcdKeyPair(cfg, name, []netip.Addr{netip.MustParseAddr("127.0.0.1"), addr}, name)
	if err != nil {
		return nil, err
	}

	for f, b := range map[string][]byte{"ca.crt": cfg.Cluster().Etcd().CA().Crt, "peer.crt": kp.Crt, "peer.key": kp.Key} {
		if err := os.WriteFile(filepath.Join(pki, f), b, 0o600); err != nil {
			return nil, err
		}
	}

	path := func(f string) string { return filepath.Join(pki, f) }
	client, peer := etcdClientURL(addr), etcdPeerURL(addr)

	args := append([]string{
		"--name=" + name, "--data-dir=" + dir,
		"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=" + initial, "--initial-cluster-state=" + state,
		"--client-cert-auth=true", "--trusted-ca-file=" + path("ca.crt"),
		"--cert-file=" + path("peer.crt"), "--key-file=" + path("peer.key"),
		"--peer-client-cert-auth=true", "--peer-trusted-ca-file=" + path("ca.crt"),
		"--peer-cert-file=" + path("peer.crt"), "--peer-key-file=" + path("peer.key"),
		"--listen-metrics-urls=", "--log-level=warn",
		// Lab only: the data dies with the lab, and fsync on a shared,
		// loaded disk only makes every write wait.
		"--unsafe-no-fsync",
	}, s.etcdTimingFlags()...)

	p, err := startProc("etcd "+name, tools.Etcd, args...)
	if err != nil {
		return nil, err
	}

	return &etcdProcess{p: p, dir: dir, name: name, addr: addr}, nil
}

// pause and resume stop and continue the process (a paused VM's vCPUs).
func (e *etcdProcess) pause()  { e.signal(syscall.SIGSTOP) }
func (e *etcdProcess) resume() { e.signal(syscall.SIGCONT) }

func (e *etcdProcess) signal(sig syscall.Signal) {
	if e != nil && !e.p.exited() {
		e.p.cmd.Process.Signal(sig) //nolint:errcheck
	}
}

// kill ends the process at once (power loss, reboot: etcd recovers from its
// WAL on the next start).
func (e *etcdProcess) kill() {
	if e == nil {
		return
	}

	e.resume() // a stopped process cannot die until continued
	e.p.kill()
}

// removeEtcdData deletes a member's data directory and certificates.
func removeEtcdData(dir string) {
	if dir == "" {
		return
	}

	os.RemoveAll(dir)          //nolint:errcheck
	os.RemoveAll(dir + ".pki") //nolint:errcheck
}
