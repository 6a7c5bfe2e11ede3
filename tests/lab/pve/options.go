package pve

import (
	"context"
	"fmt"
	"time"
)

// Options configure a lab Proxmox VE cluster.
type Options struct {
	// Listen is the address to serve on; it must be a loopback address.
	// Default "127.0.0.1:0" (a free port).
	Listen string
	// Nodes of the cluster. Default: pve1, pve2, pve3 (see DefaultNode).
	Nodes []NodeSpec
	// TokenID is the API token id, "USER@REALM!TOKENID". Default "root@pam!lab".
	TokenID string
	// TokenSecret is the token's secret (a UUID on real PVE). Default: random.
	TokenSecret string
	// TimeScale multiplies the durations of tasks, lock waits and guest
	// operations: 0 runs everything as fast as possible (tasks stay
	// asynchronous), 1 uses realistic durations.
	TimeScale float64
	// Seed makes random choices (MAC addresses, UUIDs, faults) repeatable.
	// 0 picks a random seed.
	Seed int64
	// Faults to inject from the start; see Server.SetFaults.
	Faults Faults
	// Booter decides what a started VM runs. Nil: nothing boots and the
	// guest agent never answers.
	Booter GuestBooter
	// Logf receives the lab's log lines (no secrets). Nil: discarded.
	Logf func(format string, args ...any)
	// Fetch, when set, says what a server answers to a download-url of
	// rawURL (the lab has no network): a non-nil error is the HTTP status
	// line ("404 Not Found") and fails the task as wget does (exit code 8).
	// Nil: every resolvable URL downloads.
	Fetch func(ctx context.Context, rawURL string) error
	// MACPrefix is the datacenter's mac_prefix (datacenter.cfg). Default
	// "BC:24:11", PVE's own prefix.
	MACPrefix string
}

// NodeSpec describes one Proxmox VE node.
type NodeSpec struct {
	Name      string
	Cores     int   // default 16
	MemoryMiB int64 // default 65536
	// Bridges present on the node (served by /nodes/{node}/network).
	// Default: vmbr0.
	Bridges  []string
	Storages []StorageSpec // default: local (dir) and local-lvm (lvmthin)
}

// StorageSpec describes a storage of a node.
type StorageSpec struct {
	ID      string   // "local", "local-lvm"
	Type    string   // "dir" or "lvmthin"
	Content []string // e.g. iso, import, vztmpl, snippets; images, rootdir
	SizeGiB int64
}

// Faults are injected failures. Rates are probabilities from 0 to 1.
type Faults struct {
	// LockTimeoutRate: calls that take a VM's config lock fail with
	// "can't lock file '/var/lock/qemu-server/lock-<vmid>.conf' - got timeout".
	LockTimeoutRate float64
	// TaskFailureRate: tasks end with an error instead of doing their work.
	TaskFailureRate float64
	// AgentDelay: the guest agent answers only once a guest has run this
	// long (real time, not scaled).
	AgentDelay time.Duration
	// ServerErrorRate: any API call fails with HTTP 500 before doing anything.
	ServerErrorRate float64
	// ServerErrorOnCall: the next call of this method and schema path (for
	// example "POST /nodes/{node}/qemu") fails with HTTP 500 before doing
	// anything, once; the field is cleared when it strikes.
	ServerErrorOnCall string
	// NodeRestartRate: a task's node loses power as the task starts. The
	// node answers 595 for NodeDowntime, its running VMs stop and its
	// running tasks die where they are, leaving what a killed worker leaves
	// (a create's "lock: create" config, a clone's "lock: clone" config).
	NodeRestartRate float64
	// NodeRestartOnTask: the node of the next task of this type ("qmcreate",
	// "qmclone", "qmstart", ...) restarts in the middle of it, once; the
	// field is cleared when it strikes. Tests use it to hit a task that is
	// over in an instant at time scale 0.
	NodeRestartOnTask string
	// NodeDowntime is how long a restarting node stays unreachable (real
	// time, not scaled). Default 2s.
	NodeDowntime time.Duration
	// Script holds deterministic faults (see FaultRule): the Nth call of
	// an endpoint, the Nth task of a type, a node powered off for a time.
	// Setting the faults starts counting afresh.
	Script []FaultRule
}

// Validate checks the script's rules.
func (f Faults) Validate() error {
	for _, r := range f.Script {
		if err := r.validate(); err != nil {
			return err
		}
	}
	return nil
}

func (f Faults) nodeDowntime() time.Duration {
	if f.NodeDowntime > 0 {
		return f.NodeDowntime
	}
	return 2 * time.Second
}

// DefaultNode returns the spec the lab uses for a node with that name.
func DefaultNode(name string) NodeSpec {
	return NodeSpec{
		Name:      name,
		Cores:     16,
		MemoryMiB: 65536,
		Bridges:   []string{"vmbr0"},
		Storages:  DefaultStorages(),
	}
}

// DefaultStorages are local (dir: iso, import, vztmpl, snippets) and
// local-lvm (lvmthin: images, rootdir), as on a fresh PVE install.
func DefaultStorages() []StorageSpec {
	return []StorageSpec{
		{ID: "local", Type: "dir", Content: []string{"iso", "import", "vztmpl", "snippets"}, SizeGiB: 100},
		{ID: "local-lvm", Type: "lvmthin", Content: []string{"images", "rootdir"}, SizeGiB: 500},
	}
}

func (o *Options) withDefaults() error {
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	if len(o.Nodes) == 0 {
		o.Nodes = []NodeSpec{DefaultNode("pve1"), DefaultNode("pve2"), DefaultNode("pve3")}
	}
	seen := map[string]bool{}
	for i := range o.Nodes {
		n := &o.Nodes[i]
		if n.Name == "" {
			return fmt.Errorf("lab: node %d has no name", i)
		}
		if seen[n.Name] {
			return fmt.Errorf("lab: node name %q given twice", n.Name)
		}
		seen[n.Name] = true
		if n.Cores == 0 {
			n.Cores = 16
		}
		if n.MemoryMiB == 0 {
			n.MemoryMiB = 65536
		}
		if n.Bridges == nil {
			n.Bridges = []string{"vmbr0"}
		}
		if n.Storages == nil {
			n.Storages = DefaultStorages()
		}
		for _, st := range n.Storages {
			if st.Type != "dir" && st.Type != "lvmthin" {
				return fmt.Errorf("lab: storage %q on node %s has type %q; the lab supports dir and lvmthin", st.ID, n.Name, st.Type)
			}
		}
	}
	if o.TokenID == "" {
		o.TokenID = "root@pam!lab"
	}
	if o.MACPrefix == "" {
		o.MACPrefix = "BC:24:11"
	}
	if err := o.Faults.Validate(); err != nil {
		return err
	}
	if o.TimeScale < 0 {
		return fmt.Errorf("lab: time scale %v is negative", o.TimeScale)
	}
	return nil
}
