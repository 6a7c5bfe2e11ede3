package talos

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/config"
)

// Phase is what a node is doing.
type Phase string

// Phases of a simulated node.
const (
	PhaseOff          Phase = "off"
	PhaseBooting      Phase = "booting"
	PhaseNoBoot       Phase = "no bootable device"
	PhaseMaintenance  Phase = "maintenance"
	PhaseInstalling   Phase = "installing"
	PhaseRunning      Phase = "running"
	PhaseRebooting    Phase = "rebooting"
	PhaseUpgrading    Phase = "upgrading"
	PhaseResetting    Phase = "resetting"
	PhaseShuttingDown Phase = "shutting down"
)

var nowFunc = time.Now

// Node is one running simulated Talos machine (a started VM).
type Node struct {
	sim  *Sim
	host Host

	ctx    context.Context //nolint:containedctx // the VM's power: cancelled on power off
	cancel context.CancelFunc
	done   chan struct{}

	applyCh chan appliedConfig // maintenance mode: config received
	events  chan nodeEvent     // configured mode: sequences requested over the API

	// Guarded by sim.mu.
	machine     Machine
	phase       Phase
	addr        netip.Addr // valid when reachable
	image       Image      // running image
	extensions  []string
	hostname    string
	ps          *persistState // installed state (nil: live ISO without install)
	active      config.Provider
	activeBytes []byte
	rollback    *time.Timer
	bootedAt    time.Time // entered configured mode
	seqRunning  string    // the sequence machined runs ("" none): seqlock.go
	etcd        *etcdMember
	etcdCluster *etcdCluster
	etcdSince   time.Time // etcd member started this boot
	etcdJoining bool
	// The node's real etcd process (etcdmember.go), when the
	// reconciler may try a refused join again, the last join error logged.
	etcdProc         *etcdProcess
	etcdRetryAt      time.Time
	etcdJoinErr      string
	etcdFailedLogged bool
	certsPending     bool
	apiReadyAt       time.Time // kube-apiserver ready (zero: not up)
	servers          *nodeServers
	thaw             chan struct{} // non-nil while the VM is paused (pause.go)
	// criPods: the scheduled pods the kubelet runs in boot criBoot (cri.go).
	criPods []criPod
	criBoot time.Time
	// fetch: the manifests named by URL this boot (manifest_fetch.go).
	fetch fetchState
	// cniConfBoot: the boot in which flannel's install-config init
	// container wrote the node's CNI configuration (cri.go).
	cniConfBoot time.Time

	gen       int        // configured boots so far (guarded by sim.mu)
	persistMu sync.Mutex // serializes disk state updates
}

type appliedConfig struct {
	cfg   config.Provider
	bytes []byte
}

type nodeEventKind int

const (
	evReboot nodeEventKind = iota
	evShutdown
	evUpgrade
	evStagedUpgrade
	evReset
)

// sequence is the name of the sequence a reboot or shutdown runs.
func (k nodeEventKind) sequence() string {
	if k == evShutdown {
		return "shutdown"
	}

	return "reboot"
}

type nodeEvent struct {
	kind  nodeEventKind
	gen   int    // the configured boot it was requested in
	actor string // the API call's actor ID, carried by the sequence's events
	image Image
	reset resetRequest
}

type resetRequest struct {
	graceful   bool
	reboot     bool
	userDisks  []string // disk interface names
	wipeSys    bool     // wipe the whole system disk
	partitions []string // or only these system partitions (STATE, EPHEMERAL, META)
}

// nextStep is what a boot ends with.
type nextStep int

const (
	stepStop nextStep = iota
	stepReboot
	stepPowerOff
)

// PowerOn starts a VM's guest: the firmware boots whatever the machine's boot
// order finds. host receives disk writes and the guest's own power-off.
func (s *Sim) PowerOn(m Machine, host Host) *Node {
	ctx, cancel := context.WithCancel(context.Background())

	n := &Node{
		sim:     s,
		host:    host,
		ctx:     ctx,
		cancel:  cancel,
		done:    make(chan struct{}),
		applyCh: make(chan appliedConfig, 1),
		events:  make(chan nodeEvent, 4),
		machine: cloneMachine(m),
		phase:   PhaseBooting,
	}

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel()
		close(n.done)

		return n
	}

	s.nodes[n] = struct{}{}
	s.mu.Unlock()

	go n.run()

	return n
}

func cloneMachine(m Machine) Machine {
	m.Disks = slices.Clone(m.Disks)
	m.BootOrder = slices.Clone(m.BootOrder)
	m.NICs = slices.Clone(m.NICs)

	if m.CloudInit != nil {
		ci := *m.CloudInit
		ci.Interfaces = slices.Clone(ci.Interfaces)
		ci.Nameservers = slices.Clone(ci.Nameservers)
		m.CloudInit = &ci
	}

	return m
}

// PowerOff pulls the plug: everything stops at once, nothing is written.
func (n *Node) PowerOff() {
	n.cancel()
	<-n.done
}

// Shutdown is an ACPI power button press: Talos shuts down (stopping
// services) and powers off. It returns when the guest is off or ctx ends.
func (n *Node) Shutdown(ctx context.Context) error {
	n.sim.mu.Lock()
	// machined takes the lock over (listenForACPI, takeOver), from a
	// staged upgrade's install too (holdInstall).
	installing := n.phase == PhaseInstalling && n.seqRunning == "install"
	running, gen := n.phase == PhaseRunning || installing, n.gen

	if running {
		n.seqRunning = "shutdown"
	}
	n.sim.mu.Unlock()

	if running {
		select {
		case n.events <- nodeEvent{kind: evShutdown, gen: gen}:
		default:
			n.cancel()
		}
	} else {
		// Not in configured mode: nothing to stop gracefully, it powers off.
		n.cancel()
	}

	select {
	case <-n.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Done is closed once the guest is off.
func (n *Node) Done() <-chan struct{} { return n.done }

// Status is a snapshot of a node for tests and the lab's logs.
type Status struct {
	Phase      Phase
	Address    netip.Addr
	Hostname   string
	Image      Image
	Extensions []string
	Configured bool
	EtcdMember bool
	Boots      int // configured boots of this power-on (a reboot adds one)
}

// Status reports what the node is doing.
func (n *Node) Status() Status {
	n.sim.mu.Lock()
	defer n.sim.mu.Unlock()

	return Status{
		Phase:      n.phase,
		Address:    n.addr,
		Hostname:   n.hostname,
		Image:      n.image,
		Extensions: slices.Clone(n.extensions),
		Configured: n.active != nil,
		EtcdMember: n.etcd != nil,
		Boots:      n.gen,
	}
}

// Agent answers as the QEMU guest agent would: only while the guest runs an
// OS with the qemu-guest-agent extension (from boot until shutdown).
func (n *Node) Agent() (AgentInfo, bool) {
	n.sim.mu.Lock()
	defer n.sim.mu.Unlock()

	switch n.phase {
	case PhaseOff, PhaseBooting, PhaseNoBoot, PhaseRebooting:
		return AgentInfo{}, false
	}

	if n.thaw != nil {
		return AgentInfo{}, false // paused: the agent runs no code
	}

	if !slices.Contains(n.extensions, QemuGuestAgent) {
		return AgentInfo{}, false
	}

	info := AgentInfo{Hostname: n.hostname, OSName: "Talos", OSVersion: n.image.Version}
	info.Interfaces = append(info.Interfaces, AgentInterface{Name: "lo", Addresses: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/8")}})

	for i, nic := range n.machine.NICs {
		// Predictable interface names: Proxmox puts netN in PCI slot 18+N (ens18, ...).
		iface := AgentInterface{Name: fmt.Sprintf("ens%d", 18+i), MAC: nic.MAC}

		if i == 0 && n.addr.IsValid() {
			bits := 8
			if ci := n.machine.CloudInit; ci != nil && len(ci.Interfaces) > 0 {
				bits = ci.Interfaces[0].Address.Bits()
			}

			iface.Addresses = []netip.Prefix{netip.PrefixFrom(n.addr, bits)}
		}

		info.Interfaces = append(info.Interfaces, iface)
	}

	return info, true
}

func (n *Node) setPhase(p Phase) {
	n.sim.mu.Lock()
	n.phase = p
	n.sim.mu.Unlock()
	n.publish()
	n.sim.nudge()
}

func (n *Node) logf(msg string, args ...any) {
	n.sim.mu.Lock()
	name, addr := n.machine.Name, n.addr

	if n.servers != nil && n.servers.logs != nil {
		n.servers.logs.talos(consoleLine(msg, args))
	}
	n.sim.mu.Unlock()

	args = append([]any{"vm", name, "vmid", n.machine.VMID}, args...)
	if addr.IsValid() {
		args = append(args, "address", addr.String())
	}

	n.sim.log.Info(msg, args...)
}
