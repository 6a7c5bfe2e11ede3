package talos

import (
	"errors"
	"fmt"
	"slices"
)

// persistState is what an installed node keeps on its system disk: the
// installed image (boot partitions), the machine config (STATE), its node
// identity, etcd data (EPHEMERAL /var/lib/etcd) and META tags for a staged
// upgrade. Snapshots are immutable; a change saves a new one.
type persistState struct {
	disk          string // system disk interface name
	image         Image
	config        []byte // persisted machine config; nil: not configured yet
	nodeID        string
	etcdCluster   uint64 // etcd data: which cluster and member; 0 when empty
	etcdMember    uint64
	etcdData      string // the member's data directory (etcdmember.go)
	stagedUpgrade *Image
}

func (ps *persistState) clone() *persistState {
	c := *ps
	c.config = slices.Clone(ps.config)

	return &c
}

// persist saves a new disk state and writes its token onto the system disk.
func (n *Node) persist(ps *persistState) error {
	n.persistMu.Lock()
	defer n.persistMu.Unlock()

	return n.persistLocked(ps)
}

// updateState changes the installed node's disk state; concurrent updates
// (API calls, etcd joins) apply one after the other.
func (n *Node) updateState(fn func(ps *persistState)) error {
	n.persistMu.Lock()
	defer n.persistMu.Unlock()

	n.sim.mu.Lock()
	cur := n.ps
	n.sim.mu.Unlock()

	if cur == nil {
		return errors.New("talos is not installed")
	}

	next := cur.clone()
	fn(next)

	return n.persistLocked(next)
}

func (n *Node) persistLocked(ps *persistState) error {
	token := n.sim.saveState(ps)
	content := formatDiskContent(token, ps.image)

	if err := n.host.WriteDisk(ps.disk, content); err != nil {
		return fmt.Errorf("writing disk %s: %w", ps.disk, err)
	}

	s := n.sim
	s.mu.Lock()
	n.ps = ps

	for i := range n.machine.Disks {
		if n.machine.Disks[i].Name == ps.disk {
			n.machine.Disks[i].Content = content
		}
	}
	s.mu.Unlock()

	n.publish()

	return nil
}

// wipe writes a blank disk (reset).
func (n *Node) wipe(disk string) error {
	if err := n.host.WriteDisk(disk, wipedContent); err != nil {
		return fmt.Errorf("wiping disk %s: %w", disk, err)
	}

	s := n.sim
	s.mu.Lock()

	for i := range n.machine.Disks {
		if n.machine.Disks[i].Name == disk {
			n.machine.Disks[i].Content = wipedContent
		}
	}
	s.mu.Unlock()

	return nil
}
