package pve

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
)

// This file is the lab's Go API for tests: state to assert on and changes
// made "out of band", the way an administrator in the Proxmox UI would.

// VMInfo summarises one VM.
type VMInfo struct {
	VMID     int
	Node     string
	Name     string
	Status   string // running, paused or stopped
	Template bool
	Lock     string
	Pool     string
}

// VMs lists all VMs of the cluster by id.
func (s *Server) VMs() []VMInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []VMInfo
	for _, id := range s.vmIDsLocked() {
		v := s.vms[id]
		st := "stopped"
		if v.running {
			st = "running"
		}
		if v.paused {
			st = "paused"
		}
		out = append(out, VMInfo{VMID: id, Node: v.node, Name: v.conf["name"], Status: st, Template: v.isTemplate(), Lock: v.conf["lock"], Pool: s.poolOfLocked(id)})
	}
	return out
}

// VMConfig returns a VM's current config (without pending changes) and its
// pending values; ok is false when the VM does not exist.
func (s *Server) VMConfig(vmid int) (current, pending map[string]string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, exists := s.vms[vmid]
	if !exists {
		return nil, nil, false
	}
	return copyMap(v.conf), copyMap(v.pending), true
}

// SetVMConfig changes one config key out of band (as an edit in the UI of
// a stopped VM would), checked against the schema; an empty value deletes
// the key.
func (s *Server) SetVMConfig(vmid int, key, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.vms[vmid]
	if !ok {
		return fmt.Errorf("lab: VM %d does not exist", vmid)
	}
	if value == "" {
		delete(v.conf, key)
		return nil
	}
	if s.confM.Param(key) == nil || notConfigKeys[key] {
		return fmt.Errorf("lab: %q is not a VM config key", key)
	}
	if _, errs := s.confM.Validate(map[string]any{"node": v.node, "vmid": fmt.Sprint(vmid), key: value}); errs != nil {
		return fmt.Errorf("lab: %s=%q is refused by the PVE schema: %s", key, value, errs[key])
	}
	v.conf[key] = value
	return nil
}

// DeleteVM removes a VM out of band: qemu stops, its disks and config go.
func (s *Server) DeleteVM(vmid int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.vms[vmid]
	if !ok {
		return fmt.Errorf("lab: VM %d does not exist", vmid)
	}
	if v.running {
		off := s.powerOffLocked(v)
		s.mu.Unlock()
		powerOff(off)
		s.mu.Lock()
	}
	for _, vol := range s.vmVolumesLocked(v) {
		delete(s.storageOf(v.node, vol.storage).volumes, vol.name)
	}
	s.removeVMAccessLocked(vmid)
	delete(s.vms, vmid)
	return nil
}

// StopVM powers a VM off out of band (a crash, or "Stop" in the UI).
func (s *Server) StopVM(vmid int) error {
	s.mu.Lock()
	v, ok := s.vms[vmid]
	if !ok {
		s.mu.Unlock()
		return fmt.Errorf("lab: VM %d does not exist", vmid)
	}
	var off Guest
	if v.running {
		off = s.powerOffLocked(v)
	}
	s.mu.Unlock()
	powerOff(off)
	return nil
}

// SetFaults replaces the injected faults at run time; the counting of the
// script's rules starts afresh. An invalid rule panics: it is a mistake in
// the test that sets it.
func (s *Server) SetFaults(f Faults) {
	if err := f.Validate(); err != nil {
		panic(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f.Script = append([]FaultRule(nil), f.Script...)
	s.faults = f
	s.resetScriptLocked()
}

// Faults returns the injected faults.
func (s *Server) Faults() Faults {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.faults
	f.Script = append([]FaultRule(nil), f.Script...)
	return f
}

// RestartNode takes a node offline for down (real time), as a power loss
// does: its running VMs stop, its running tasks die (see powerLossLocked),
// and its API answers 595 until it is back. Once back it starts its VMs
// with onboot=1, as pve-guests.service does (see startAllLocked).
func (s *Server) RestartNode(name string, down time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.node(name)
	if n == nil {
		return fmt.Errorf("lab: no node %q", name)
	}
	s.powerLossLocked(n, down)
	return nil
}

// PowerOnNode brings a node that is down back now instead of at the end
// of its downtime (it then starts its onboot VMs); a node that is up is
// left alone. Tests use it to end an outage at a point of their run rather
// than after a time that a loaded machine may overrun.
func (s *Server) PowerOnNode(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.node(name)
	if n == nil {
		return fmt.Errorf("lab: no node %q", name)
	}
	if !n.online && n.powerOn != nil {
		close(n.powerOn)
		n.powerOn = nil
	}
	return nil
}

// ProxyTimeout is how long pveproxy waits for another node it proxies a
// request to before it answers 596 (pve-http-server
// src/PVE/APIServer/AnyEvent.pm proxy_request: http_request with
// `timeout => 30`, an inactivity timeout).
const ProxyTimeout = 30 * time.Second

// HangNode makes a node's API accept connections and never answer, as a
// node whose pveproxy or pmxcfs hangs (or whose link drops packets) does:
// it stays a cluster member, online in /cluster/resources with its VMs as
// last reported, but every request for /nodes/{name}/... waits for
// proxyTimeout (real time, not scaled; ProxyTimeout is pveproxy's) and
// then fails with 596 "Connection timed out", or ends when the client
// gives up first. AnswerNode ends it.
func (s *Server) HangNode(name string, proxyTimeout time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.node(name)
	if n == nil {
		return fmt.Errorf("lab: no node %q", name)
	}
	if n.hung == nil {
		n.hung = make(chan struct{})
	}
	n.hangFor = proxyTimeout
	s.logf("node %s hangs: its API accepts connections and does not answer", name)
	return nil
}

// AnswerNode ends HangNode: the node answers again, also the requests
// waiting for it.
func (s *Server) AnswerNode(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.node(name)
	if n == nil {
		return fmt.Errorf("lab: no node %q", name)
	}
	if n.hung != nil {
		close(n.hung)
		n.hung = nil
	}
	return nil
}

// NodeWaiting counts the requests waiting for a hung node now (see
// HangNode); a client that gave up on one is no longer counted once the
// lab noticed (its connection closed).
func (s *Server) NodeWaiting(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.node(name); n != nil {
		return n.waiting
	}
	return 0
}

// NodeOnline reports whether a node answers (false while it is down).
func (s *Server) NodeOnline(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.node(name)
	return n != nil && n.online
}

// rollNodeRestartLocked decides whether a task of type typ restarts its
// node, and for how long. Called with s.mu held.
func (s *Server) rollNodeRestartLocked(typ string) (bool, time.Duration) {
	if s.faults.NodeRestartOnTask != "" && s.faults.NodeRestartOnTask == typ {
		s.faults.NodeRestartOnTask = ""
		return true, s.faults.nodeDowntime()
	}
	return s.rollLocked(s.faults.NodeRestartRate), s.faults.nodeDowntime()
}

// powerLossLocked takes node n down for down: running VMs stop, running
// tasks die without a result and without their cleanup (their status reads
// "unexpected status" once the node is back, as pve-common's
// UPID.pm read_status answers for a log without a final TASK line). Called
// with s.mu held.
func (s *Server) powerLossLocked(n *node, down time.Duration) {
	n.online = false
	s.logf("node %s lost power; back in %s", n.spec.Name, down)
	var off []Guest
	for _, v := range s.vms {
		if v.node == n.spec.Name && v.running {
			off = append(off, s.powerOffLocked(v))
		}
	}
	for _, t := range s.tasks {
		if t.node == n.spec.Name && !t.done && !t.killed {
			t.killed = true
			t.cancel(errPowerLoss)
		}
	}
	on := make(chan struct{})
	n.powerOn = on
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		powerOff(off...)
		select {
		case <-time.After(down):
		case <-on:
		case <-s.ctx.Done():
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if n.online || (n.powerOn != nil && n.powerOn != on) {
			return // back already, or a later power loss owns the node now
		}
		n.powerOn = nil
		n.online, n.bootTime = true, time.Now()
		s.logf("node %s is back", n.spec.Name)
		if s.ctx.Err() == nil {
			s.startAllLocked(n)
		}
	}()
}

// VolumeInfo describes one volume of a storage.
type VolumeInfo struct {
	VolID     string
	Content   string
	Format    string
	SizeBytes int64
	Owner     int
	Image     Image
	Parent    string
}

// Volumes lists a storage's volumes on a node.
func (s *Server) Volumes(nodeName, storageID string) []VolumeInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.node(nodeName)
	if n == nil || n.storage(storageID) == nil {
		return nil
	}
	var out []VolumeInfo
	st := n.storage(storageID)
	for _, name := range slices.Sorted(maps.Keys(st.volumes)) {
		v := st.volumes[name]
		out = append(out, VolumeInfo{VolID: v.volid(), Content: v.content, Format: v.format, SizeBytes: v.size, Owner: v.owner, Image: v.image, Parent: v.parent})
	}
	return out
}

// Storages lists a node's storage ids.
func (s *Server) Storages(nodeName string) []string {
	n := s.node(nodeName)
	if n == nil {
		return nil
	}
	var out []string
	for _, st := range n.storages {
		out = append(out, st.spec.ID)
	}
	return out
}

// CloudInit returns the content of a VM's cloud-init drive as last
// generated (at start or regenerate), nil without one.
func (s *Server) CloudInit(vmid int) *CloudInit {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.vms[vmid]
	if !ok || v.cloudinit == nil {
		return nil
	}
	ci := *v.cloudinit
	return &ci
}

// TaskInfo describes a task.
type TaskInfo struct {
	UPID, Node, Type, ID, ExitStatus string
	Done                             bool
	Log                              []string
}

// Tasks lists all tasks, oldest first.
func (s *Server) Tasks() []TaskInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []TaskInfo
	for _, t := range s.taskOrder {
		out = append(out, TaskInfo{UPID: t.upid, Node: t.node, Type: t.typ, ID: t.id, ExitStatus: t.exit, Done: t.done, Log: t.lines()})
	}
	return out
}

// WaitTasks blocks until no task is running.
func (s *Server) WaitTasks(ctx context.Context) error {
	for {
		s.mu.Lock()
		var pending *task
		for _, t := range s.taskOrder {
			if !t.done {
				pending = t
				break
			}
		}
		s.mu.Unlock()
		if pending == nil {
			return nil
		}
		if err := pending.wait(ctx); err != nil {
			return err
		}
	}
}

// NodeMemory reports a node's memory in MiB: total and in use (host
// reservation plus running guests).
func (s *Server) NodeMemory(nodeName string) (total, used int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.node(nodeName)
	if n == nil {
		return 0, 0
	}
	return n.spec.MemoryMiB, s.nodeUsedMemLocked(nodeName)
}

// Pools lists pool ids.
func (s *Server) Pools() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.pools))
}

// UnlockVM removes a VM's config lock, as `qm unlock <vmid>` does on the
// node: the way out of a lock that an interrupted task left behind, which
// the API offers only to root@pam (skiplock).
func (s *Server) UnlockVM(vmid int) error { return s.SetVMConfig(vmid, "lock", "") }
