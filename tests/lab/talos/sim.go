// Package talos simulates Talos Linux nodes for the lab: a node boots from a
// Talos ISO or disk, serves the Talos API on <address>:50000 (maintenance mode
// with a self-signed certificate, then apid with mTLS), installs itself onto
// the disk its config names, runs a real etcd member per control plane
// (etcdreal.go) and, once bootstrapped, a real kube-apiserver on those
// members (kubecp.go). Real clients (machinery's client
// package, used as talosctl uses it) talk to it over the network.
//
// The behaviour follows siderolabs/talos v1.12 (internal/app/maintenance,
// internal/app/machined, internal/app/apid); comments cite the files.
package talos

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/constants"
)

// Options configures a simulator.
type Options struct {
	// TimeScale multiplies the realistic durations of boots, installs and
	// reboots: 0 makes them instant (still asynchronous), 1 is realistic.
	TimeScale float64
	// Logger receives what a console would show (why a node is unreachable,
	// install failures, ...). Nil discards.
	Logger *slog.Logger
	// APIPort is the Talos API port (default 50000, as apid).
	APIPort int
	// Catalog resolves schematic IDs to extensions (default: NewCatalog()).
	Catalog *Catalog
	// Faults injected from the start (see SetFaults).
	Faults Faults
	// Pull says whether an installer image can be pulled (the lab has no
	// registry): nil or a nil error pulls, an error fails the install or
	// upgrade as containerd's would. Nil: every parsable reference pulls.
	Pull func(ref string) error
}

// Realistic durations, scaled by Options.TimeScale.
const (
	bootDuration      = 20 * time.Second // firmware to maintenance/apid
	installDuration   = 25 * time.Second // pull installer, write disk
	rebootDuration    = 15 * time.Second // stop services, firmware
	criDuration       = 10 * time.Second // configured boot to CRI up (bootstrap allowed)
	etcdJoinDuration  = 10 * time.Second
	apiServerDuration = 20 * time.Second // etcd healthy to kube-apiserver ready
	kubeletDuration   = 15 * time.Second // kubelet up to node registered
	installFailPause  = 10 * time.Second // "rebooting in 10 seconds" after a failed boot sequence
)

// failPauseFloor is the least installFailPause lasts at any time scale
// (failBoot).
const failPauseFloor = 2 * time.Second

// NodeDurations are how long a simulated node's steps take at time scale 1,
// for benchmarks that compute a cluster's critical path from the same
// numbers the simulator waits.
type NodeDurations struct {
	// Boot: firmware to the Talos API (maintenance mode, or apid).
	Boot time.Duration
	// Install and Reboot: after the first configuration, before the
	// configured boot.
	Install, Reboot time.Duration
	// CRI: configured boot to CRI up; bootstrap is accepted from then on.
	CRI time.Duration
	// EtcdJoin: after CRI, until a control plane joins etcd.
	EtcdJoin time.Duration
	// EtcdStartSpread: a joining control plane's first attempt comes up
	// to this much later than EtcdJoin, a fixed share per node
	// (etcdpace.go).
	EtcdStartSpread time.Duration
	// EtcdNextJoin: control planes join one at a time, at least this far
	// apart (etcdpace.go etcdNextJoin): the next learner is let in once the
	// last one is promoted, at the Talos version's promotion pace, and its
	// peer connection is etcd's HealthInterval old.
	EtcdNextJoin time.Duration
	// APIServer: etcd member running to kube-apiserver ready.
	APIServer time.Duration
	// Kubelet: configured boot to the node registered (once an API server
	// answers on the cluster endpoint).
	Kubelet time.Duration
}

// RealisticNodeDurations are the simulator's durations at time scale 1 for
// nodes running Talos version.
func RealisticNodeDurations(version string) NodeDurations {
	return NodeDurations{Boot: bootDuration, Install: installDuration, Reboot: rebootDuration, CRI: criDuration,
		EtcdJoin: etcdJoinDuration, EtcdStartSpread: etcdStartSpread, EtcdNextJoin: etcdNextJoin(version), APIServer: apiServerDuration,
		Kubelet: kubeletDuration}
}

// Sim is one simulated world of Talos nodes: nodes find each other by
// address (apid forwarding, etcd, Kubernetes), as on one flat network.
type Sim struct {
	opts    Options
	log     *slog.Logger
	catalog *Catalog

	mu       sync.Mutex
	nodes    map[*Node]struct{}
	byAddr   map[netip.Addr]*Node
	states   map[string]*persistState // installed-node state by disk token
	clusters map[string]*cluster      // by cluster.id
	etcds    map[uint64]*etcdCluster  // every etcd cluster by ID
	token    int
	closed   bool
	faults   Faults
	// skew and skewSeen record Kubernetes version-skew violations (skew.go).
	skew     []SkewViolation
	skewSeen map[string]bool
	// dir holds the real control planes' files (kubecp.go), made on first use.
	dir     string
	dirOnce sync.Once
	// quorum records etcd quorum losses; quorumOpen indexes the ongoing
	// episode of each etcd cluster (quorum.go).
	quorum     []QuorumLoss
	quorumOpen map[*etcdCluster]int
	// etcdDialTimeouts counts the etcd calls that waited out the etcd
	// client's dial timeout (etcdFailure).
	etcdDialTimeouts atomic.Int64

	kick chan struct{}
	done chan struct{}
	wg   sync.WaitGroup
}

// New starts a simulator. Close it to stop every node.
func New(opts Options) *Sim {
	if opts.APIPort == 0 {
		opts.APIPort = constants.ApidPort
	}

	if opts.Catalog == nil {
		opts.Catalog = NewCatalog()
	}

	sweepDeadWorkDirs()

	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}

	s := &Sim{
		opts:     opts,
		log:      logger,
		catalog:  opts.Catalog,
		nodes:    map[*Node]struct{}{},
		byAddr:   map[netip.Addr]*Node{},
		states:   map[string]*persistState{},
		clusters: map[string]*cluster{},
		etcds:    map[uint64]*etcdCluster{},
		faults:   opts.Faults,
		kick:     make(chan struct{}, 1),
		done:     make(chan struct{}),
	}

	s.wg.Add(1)

	go s.reconcileLoop()

	return s
}

// goLocked runs f in a goroutine that Close waits for, unless Close has
// begun (then it returns false and f does not run). sim.mu must be held:
// the Add then never races Close's Wait, which follows closed = true.
func (s *Sim) goLocked(f func()) bool {
	if s.closed {
		return false
	}

	s.wg.Add(1)

	go func() {
		defer s.wg.Done()
		f()
	}()

	return true
}

// Catalog returns the schematic catalog (tests register schematics on it).
func (s *Sim) Catalog() *Catalog { return s.catalog }

// Close powers off every node and stops the simulator.
func (s *Sim) Close() {
	defer watchdog(closePatience, panicStuckClose)()

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()

		return
	}

	s.closed = true

	nodes := make([]*Node, 0, len(s.nodes))
	for n := range s.nodes {
		nodes = append(nodes, n)
	}
	s.mu.Unlock()

	for _, n := range nodes {
		n.PowerOff()
	}

	close(s.done)
	s.wg.Wait()

	s.closeKube()
}

// Node returns the running node that owns an address, or nil.
func (s *Sim) Node(addr netip.Addr) *Node {
	s.mu.Lock()
	defer s.mu.Unlock()

	return s.byAddr[addr]
}

// scaled turns a realistic duration into the simulator's.
func (s *Sim) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) * s.opts.TimeScale)
}

// sleep waits a scaled duration; false when ctx ended first.
func (s *Sim) sleep(ctx context.Context, d time.Duration) bool {
	d = s.scaled(d)
	if d <= 0 {
		return ctx.Err() == nil
	}

	return sleepCtx(ctx, d)
}

// nudge asks the reconciler to look at cross-node state again.
func (s *Sim) nudge() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// nudgeAfter nudges once a scaled duration has passed.
func (s *Sim) nudgeAfter(d time.Duration) {
	time.AfterFunc(s.scaled(d)+time.Millisecond, s.nudge)
}

// apiEndpoint is addr:port of the Talos API.
func (s *Sim) apiEndpoint(addr netip.Addr) string {
	return netip.AddrPortFrom(addr, uint16(s.opts.APIPort)).String()
}

// saveState stores an immutable snapshot of an installed node's disk state
// and returns the token that the disk content refers to.
func (s *Sim) saveState(ps *persistState) string {
	s.mu.Lock()
	defer s.mu.Unlock()

	s.token++
	token := strconv.Itoa(s.token)
	s.states[token] = ps

	return token
}

func (s *Sim) loadState(token string) *persistState {
	s.mu.Lock()
	defer s.mu.Unlock()

	return s.states[token]
}

// pull asks Options.Pull about an installer image reference.
func (s *Sim) pull(ref string) error {
	if s.opts.Pull == nil || ref == "" {
		return nil
	}

	return s.opts.Pull(ref)
}
