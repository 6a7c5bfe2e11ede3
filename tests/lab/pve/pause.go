package pve

import (
	"context"
	"fmt"
	"path"
	"time"
)

// Pausing follows qemu-server 8.x/9.x src/PVE/API2/Qemu.pm (vm_suspend,
// vm_resume) and QemuServer.pm (vm_suspend, vm_resume): suspend without
// todisk is the task "qmpause", QMP "stop" under the config lock (a lock
// other than backup refuses it unless skiplock); resume is "qmresume", QMP
// "cont", nothing to do for a VM that runs. qemu keeps running while paused:
// status/current says status "running", qmpstatus "paused", while
// /cluster/resources says "paused" (pvestatd broadcasts qmpstatus ||
// status, PVE/Service/pvestatd.pm update_qemu_status).

// Pauser is a guest whose vCPUs QEMU can stop and continue: while paused
// nothing in it runs or answers (its network, its agent).
type Pauser interface {
	Pause()
	Resume()
}

// pausedMsg is what vm_shutdown and vm_reboot answer for a paused VM.
const pausedMsg = "VM is paused - cannot shutdown\n"

func (s *Server) hSuspend(r *request) (any, error) {
	if err := rootOnlyParams(r, "skiplock"); err != nil {
		return nil, err
	}
	if r.p["todisk"] == "1" {
		// hibernation writes the VM state to a volume and stops qemu
		// (lock "suspended", vmstate in the config): not simulated
		return nil, fail("lab: suspend to disk (todisk) is not simulated\n")
	}
	return s.runningVMTask(r, "qmpause", s.pauseVM)
}

func (s *Server) hResume(r *request) (any, error) {
	if err := rootOnlyParams(r, "skiplock", "nocheck"); err != nil {
		return nil, err
	}
	return s.runningVMTask(r, "qmresume", s.resumeVM)
}

// runningVMTask starts task typ doing do on the request's VM, which must be
// running (qemu-server checks before it forks the worker).
func (s *Server) runningVMTask(r *request, typ string, do func(nodeName string, vmid int, skipLock bool) error) (any, error) {
	vmid, nodeName := r.vmid(), r.p["node"]
	s.mu.Lock()
	v, err := s.vmLocked(nodeName, vmid)
	if err == nil && !v.running {
		err = fail("VM %d not running\n", vmid)
	}
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	skipLock := r.p["skiplock"] == "1"
	return s.vmTask(r, typ, func(ctx context.Context, l *taskLog) error {
		return do(nodeName, vmid, skipLock)
	})
}

// pauseVM is vm_suspend without state: QMP "stop".
func (s *Server) pauseVM(nodeName string, vmid int, skipLock bool) error {
	unlock, err := s.lockVM(vmid, 10*time.Second)
	if err != nil {
		return err
	}
	defer unlock()
	s.mu.Lock()
	v, err := s.vmLocked(nodeName, vmid)
	if err == nil && !skipLock && v.conf["lock"] != "backup" {
		err = checkLock(v)
	}
	if err == nil && !v.running {
		err = fmt.Errorf("VM %d not running\n", vmid)
	}
	if err != nil {
		s.mu.Unlock()
		return err
	}
	already := v.paused
	v.paused = true
	g := v.guest
	s.mu.Unlock()
	if p, ok := g.(Pauser); ok && !already {
		p.Pause()
	}
	return nil
}

// resumeVM is vm_resume: QMP "cont"; a VM that runs is left alone.
func (s *Server) resumeVM(nodeName string, vmid int, skipLock bool) error {
	unlock, err := s.lockVM(vmid, 10*time.Second)
	if err != nil {
		return err
	}
	defer unlock()
	s.mu.Lock()
	v, err := s.vmLocked(nodeName, vmid)
	if err == nil && !v.running {
		err = fmt.Errorf("VM %d not running\n", vmid)
	}
	if err != nil || !v.paused {
		s.mu.Unlock()
		return err
	}
	if !skipLock && v.conf["lock"] != "backup" {
		if err := checkLock(v); err != nil {
			s.mu.Unlock()
			return err
		}
	}
	v.paused = false
	g := v.guest
	s.mu.Unlock()
	if p, ok := g.(Pauser); ok {
		p.Resume()
	}
	return nil
}

// agentPausedLocked is what an agent command answers while the VM is
// paused: the guest runs no code, so the agent's channel times out
// (PVE::QMPClient: "VM <vmid> qmp command '<cmd>' failed - got timeout").
func agentPausedLocked(r *request, v *vm) error {
	return fail("VM %d qmp command 'guest-%s' failed - got timeout\n", v.vmid, path.Base(r.method.Path))
}

// PauseVM pauses a VM out of band ("Pause" in the UI, qm suspend).
func (s *Server) PauseVM(vmid int) error {
	s.mu.Lock()
	v, ok := s.vms[vmid]
	node := ""
	if ok {
		node = v.node
	}
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("lab: VM %d does not exist", vmid)
	}
	return s.pauseVM(node, vmid, true)
}
