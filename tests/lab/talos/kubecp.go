package talos

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/config"
)

// kubeControlPlane is a cluster's real Kubernetes control plane: one
// kube-apiserver process (tools/kube) on the control planes' etcd members,
// started when the first control plane's kube-apiserver static pod would
// start, stopped when no control plane runs one, and with the simulator. The TCP listeners on the
// control planes' addresses and VIPs (kubeproxy.go) forward to it; the
// simulated kubelets and controllers (kubeagent.go) are its clients.
//
// One apiserver serves every control plane of the cluster: /version shows
// the binary's version, and an older cluster is served with
// --emulated-version (see emulatedVersion).
type kubeControlPlane struct {
	sim   *Sim
	id    string
	dir   string // the cluster's files: certificates, configs
	tools KubeTools
	want  chan kubeWant // latest wins
	done  chan struct{}
	wg    sync.WaitGroup

	mu      sync.Mutex
	ready   bool         // the apiserver serves (answered /readyz since it started)
	apiAddr string       // 127.0.0.1:port of the serving apiserver
	failure string       // why it does not serve, for the node log
	sans    []netip.Addr // addresses the served certificate names
	pki     *kubePKI
	apiProc *proc // the serving kube-apiserver (its output is its log)
	starts  int   // kube-apiserver processes started (tests count restarts)

	etcd *etcdLocal // the apiservers' --etcd-servers (supervisor's)
}

// kubeWant is what the simulator wants the control plane to be.
type kubeWant struct {
	run   bool            // a control plane's kube-apiserver static pod runs
	store uint64          // the etcd cluster's ID: a new cluster is a new keyspace
	cfg   config.Provider // a running control plane's config (secrets, versions)
	sans  []netip.Addr    // addresses clients reach it on
	// emulate is the --emulated-version ("1.34"), "" for the binary's own.
	emulate string
	// etcdMembers: host:port of the voting members the apiserver pods
	// talk to (etcdlocal.go; without quorum it does not get ready, as on a
	// real control plane). A change needs no new apiserver.
	etcdMembers []string
	// etcdGW asks the members whether they know a leader (etcdlocal.go).
	etcdGW *etcdGateway
}

func (w kubeWant) same(o kubeWant) bool {
	return w.run == o.run && w.store == o.store && w.cfg == o.cfg &&
		slices.Equal(w.sans, o.sans) && w.emulate == o.emulate && slices.Equal(w.etcdMembers, o.etcdMembers) && w.etcdGW == o.etcdGW
}

func newKubeControlPlane(s *Sim, id string, tools KubeTools) *kubeControlPlane {
	k := &kubeControlPlane{
		sim: s, id: id, tools: tools,
		dir:  filepath.Join(s.workDir(), "cluster-"+strconv.Itoa(len(s.clusters))),
		want: make(chan kubeWant, 1),
		done: make(chan struct{}),
	}

	k.wg.Add(1)

	go k.supervise()

	return k
}

// set hands the supervisor a new wish.
func (k *kubeControlPlane) set(w kubeWant) {
	for {
		select {
		case k.want <- w:
			return
		default:
		}

		select {
		case <-k.want:
		default:
		}
	}
}

func (k *kubeControlPlane) close() {
	close(k.done)
	k.wg.Wait()
}

// serving returns the apiserver's address while it serves.
func (k *kubeControlPlane) serving() (string, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()

	return k.apiAddr, k.ready
}

// servedAddrs are the addresses clients may reach the apiserver on now:
// it serves and its certificate names them (empty otherwise).
func (k *kubeControlPlane) servedAddrs() map[netip.Addr]bool {
	k.mu.Lock()
	defer k.mu.Unlock()

	out := map[netip.Addr]bool{}

	if k.ready {
		for _, a := range k.sans {
			out[a] = true
		}
	}

	return out
}

func (k *kubeControlPlane) setSANs(sans []netip.Addr) {
	k.mu.Lock()
	k.sans = slices.Clone(sans)
	k.mu.Unlock()

	k.sim.nudge()
}

func (k *kubeControlPlane) setServing(addr string, ready bool, failure string) {
	k.mu.Lock()
	changed := k.ready != ready || k.apiAddr != addr
	k.apiAddr, k.ready, k.failure = addr, ready, failure
	k.mu.Unlock()

	if changed {
		k.sim.nudge()
	}
}

// running processes, owned by the supervisor goroutine.
type kubeProcs struct {
	store    uint64
	api      *proc
	apiAddr  string
	emulated string
	sans     []netip.Addr
	started  time.Time
}

func (k *kubeControlPlane) supervise() {
	defer k.wg.Done()

	var (
		cur  kubeWant
		have kubeProcs
	)

	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()

	defer func() {
		have.api.stop(5 * time.Second)

		if k.etcd != nil {
			k.etcd.close()
		}
	}()

	for {
		select {
		case <-k.done:
			return
		case w := <-k.want:
			if w.same(cur) {
				continue
			}

			cur = w
		case <-tick.C:
		}

		k.converge(cur, &have)
	}
}

// converge moves the processes one step towards w.
func (k *kubeControlPlane) converge(w kubeWant, have *kubeProcs) {
	if !w.run || w.store != have.store {
		if have.api != nil {
			have.api.stop(5 * time.Second)
			*have = kubeProcs{}
			k.setServing("", false, "")
		}

		if !w.run {
			return
		}

		have.store = w.store
	}

	if k.pki == nil || k.pki.cfg != w.cfg && !samePKI(k.pki.cfg, w.cfg) {
		pki, err := newKubePKI(filepath.Join(k.dir, "pki"), w.cfg)
		if err != nil {
			k.setServing("", false, "kube-apiserver certificates: "+err.Error())

			return
		}

		k.mu.Lock()
		k.pki = pki
		k.mu.Unlock()
	}

	if k.etcd == nil {
		e, err := newEtcdLocal()
		if err != nil {
			k.setServing(have.apiAddr, false, "etcd endpoint: "+err.Error())

			return
		}

		k.etcd = e
	}

	// The apiserver uses the members; their quorum is real.
	k.etcd.setMembers(w.etcdMembers, w.etcdGW.leaderKnown())

	if len(w.etcdMembers) == 0 {
		return
	}

	if !slices.Equal(w.sans, have.sans) {
		if err := k.pki.writeServing(w.cfg, w.sans); err != nil {
			k.setServing(have.apiAddr, false, err.Error())

			return
		}

		have.sans = slices.Clone(w.sans)

		if have.api != nil {
			k.waitServedSANs(have.apiAddr, w.sans)
			k.setSANs(have.sans)
		}
	}

	if have.api != nil && have.api.exited() {
		k.logf("kube-apiserver exited", "output", have.api.lastLines(10))
		have.api = nil
		k.setServing("", false, "kube-apiserver exited")
	}

	// A new apiserver for a new --emulated-version starts beside the old
	// one, which serves until the new one is ready (a rolling restart).
	if have.api == nil || have.emulated != w.emulate {
		k.startAPIServer(w, have)
	}
}

func (k *kubeControlPlane) startAPIServer(w kubeWant, have *kubeProcs) {
	ports, err := freePorts(1)
	if err != nil {
		k.setServing(have.apiAddr, false, err.Error())

		return
	}

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))

	api, err := startProc("kube-apiserver", k.tools.APIServer, k.pki.apiServerArgs(w, k.etcd.url(), ports[0])...)
	if err != nil {
		k.setServing(have.apiAddr, false, err.Error())

		return
	}

	k.mu.Lock()
	k.starts++
	k.mu.Unlock()

	began := time.Now()

	if err := k.waitReady(api, addr, w); err != nil {
		api.stop(5 * time.Second)
		k.logf("kube-apiserver did not become ready", "error", err, "output", api.lastLines(10))
		k.setServing(have.apiAddr, have.api != nil && !have.api.exited(), "kube-apiserver did not become ready: "+err.Error())

		return
	}

	k.sim.log.Info("kube-apiserver ready", "cluster", k.id, "after", time.Since(began).Round(time.Millisecond))

	old := have.api
	have.api, have.apiAddr, have.emulated, have.started = api, addr, w.emulate, time.Now()

	k.mu.Lock()
	k.apiProc = api
	k.mu.Unlock()

	k.setSANs(have.sans)
	k.setServing(addr, true, "")

	old.stop(5 * time.Second)
}

// waitReady polls /readyz until the apiserver answers ok, the process
// ends, the lab closes, the simulator wants something other than
// w, or startTimeout passes. The bound is generous: on a loaded machine
// (load 50 on 2 cores) the apiserver needed more than the one minute it
// once had, was killed and replaced by one that needed as long, and the
// cluster never served (a livelock). A process that gives up ends itself
// (a failed post-start hook is fatal); the bound is for one that neither
// serves nor ends.
func (k *kubeControlPlane) waitReady(api *proc, addr string, w kubeWant) error {
	c := k.pki.client(func() string { return addr }, "lab-controllers", "system:masters")
	defer c.close()

	began, warned := time.Now(), false
	deadline := began.Add(startTimeout)

	// A wish this start does not contradict (new addresses to serve) is
	// handed back for the supervisor's next step.
	var pending *kubeWant

	defer func() {
		if pending != nil {
			k.set(*pending)
		}
	}()

	for time.Now().Before(deadline) {
		if api.exited() {
			return fmt.Errorf("exited: %v", api.err)
		}

		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		body, err := c.raw(ctx, "/readyz")
		cancel()

		if err == nil && strings.TrimSpace(string(body)) == "ok" {
			return nil
		}

		if !warned && time.Since(began) > time.Minute {
			warned = true
			k.logf("kube-apiserver is not ready after a minute (a loaded machine?); still waiting", "address", addr)
		}

		select {
		case <-k.done:
			return errors.New("the lab is closing")
		case next := <-k.want:
			pending = &next // the newest wish counts
			if next.same(w) {
				pending = nil
			}

			if next.run != w.run || next.store != w.store || next.emulate != w.emulate ||
				next.cfg != w.cfg && !samePKI(next.cfg, w.cfg) {
				return errors.New("the simulator wants another control plane now")
			}

			// Members come and go while it starts, as they do beside a
			// starting static pod.
			k.etcd.setMembers(next.etcdMembers, next.etcdGW.leaderKnown())
		case <-time.After(100 * time.Millisecond):
		}
	}

	return fmt.Errorf("no ready answer on %s within %s", addr, startTimeout)
}

// startTimeout bounds a kube-apiserver's start (waitReady).
const startTimeout = 5 * time.Minute

// waitServedSANs waits (briefly) until the apiserver serves the rewritten
// certificate: it reloads --tls-cert-file when the file changes.
func (k *kubeControlPlane) waitServedSANs(addr string, sans []netip.Addr) {
	deadline := time.Now().Add(10 * time.Second)

	for time.Now().Before(deadline) {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only reads the served certificate
		if err == nil {
			cert := conn.ConnectionState().PeerCertificates[0]
			conn.Close() //nolint:errcheck

			if coversAll(cert.IPAddresses, sans) {
				return
			}
		}

		time.Sleep(50 * time.Millisecond)
	}
}

func coversAll(ips []net.IP, sans []netip.Addr) bool {
	for _, a := range sans {
		if !slices.ContainsFunc(ips, func(ip net.IP) bool { return ip.Equal(net.IP(a.AsSlice())) }) {
			return false
		}
	}

	return true
}

func (k *kubeControlPlane) logf(msg string, args ...any) {
	k.sim.log.Warn(msg, append([]any{"cluster", k.id}, args...)...)
}

// freePorts finds loopback ports nobody listens on right now.
func freePorts(n int) ([]int, error) {
	var (
		ports []int
		ls    []net.Listener
	)

	defer func() {
		for _, l := range ls {
			l.Close() //nolint:errcheck
		}
	}()

	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}

		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}

	return ports, nil
}

// workDir is the simulator's directory for cluster files (removed on Close).
func (s *Sim) workDir() string {
	s.dirOnce.Do(func() {
		dir, err := os.MkdirTemp("", workDirPrefix)
		if err != nil {
			dir = filepath.Join(os.TempDir(), fmt.Sprintf("%s%d-%d", workDirPrefix, os.Getpid(), time.Now().UnixNano()))
		}

		writeOwner(dir)

		s.dir = dir
	})

	return s.dir
}
