package pve

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"
)

// Power operations follow qemu-server src/PVE/API2/Qemu.pm (vm_start,
// vm_stop, vm_shutdown, vm_reboot, vm_reset) and QemuServer.pm (vm_start,
// _do_vm_stop).

func (s *Server) hStatusCurrent(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.vmLocked(r.p["node"], r.vmid())
	if err != nil {
		return nil, err
	}
	st := s.vmStatusLocked(v)
	if v.running {
		// what vmstatus($vmid, 1) adds from QMP for a running VM: the
		// balloon (enabled unless balloon=0), block and NIC counters
		st["proxmox-support"] = map[string]any{}
		blocks := map[string]any{}
		for _, k := range slices.Sorted(maps.Keys(v.runConf)) {
			if isDriveKey(k) {
				blocks[k] = map[string]any{"rd_bytes": 0, "wr_bytes": 0, "rd_operations": 0, "wr_operations": 0}
			}
		}
		st["blockstat"] = blocks
		if intOr(v.runConf, "balloon", 1) != 0 {
			max := st["maxmem"].(int64)
			st["balloon"] = max
			st["freemem"] = max - st["mem"].(int64)
			st["ballooninfo"] = map[string]any{"actual": max, "max_mem": max, "total_mem": max, "free_mem": st["freemem"]}
		}
	}
	return st, nil
}

func (s *Server) hStatusIndex(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.vmLocked(r.p["node"], r.vmid()); err != nil {
		return nil, err
	}
	var out []map[string]string
	for _, c := range []string{"current", "start", "stop", "reset", "shutdown", "suspend", "reboot"} {
		out = append(out, map[string]string{"subdir": c})
	}
	return out, nil
}

// vmTask starts a worker for one VM on the node of the request.
func (s *Server) vmTask(r *request, typ string, fn func(ctx context.Context, l *taskLog) error) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.startTask(r.p["node"], typ, r.p["vmid"], r.user, fn), nil
}

func (s *Server) hStart(r *request) (any, error) {
	if err := rootOnlyParams(r, "skiplock", "keepActive", "migratedfrom", "stateuri", "targetstorage", "force-cpu"); err != nil {
		return nil, err
	}
	vmid, nodeName := r.vmid(), r.p["node"]
	skipLock := r.p["skiplock"] == "1"
	return s.vmTask(r, "qmstart", func(ctx context.Context, l *taskLog) error {
		s.mu.Lock()
		v, err := s.vmLocked(nodeName, vmid)
		s.mu.Unlock()
		if err != nil {
			return err
		}
		return s.startVM(ctx, l, v, skipLock)
	})
}

// startVM is vm_start: under the config lock, refuse templates, locks and
// running VMs, apply pending changes, regenerate the cloud-init drive, then
// "run kvm", which fails like kvm when a bridge is missing or the node lacks
// free memory. The guest OS boots afterwards.
func (s *Server) startVM(ctx context.Context, l *taskLog, v *vm, skipLock bool) error {
	unlock, err := s.lockVM(v.vmid, 10*time.Second)
	if err != nil {
		return err
	}
	defer unlock()
	s.mu.Lock()
	if cur, ok := s.vms[v.vmid]; !ok || cur != v {
		s.mu.Unlock()
		return configMissing(v.node, v.vmid)
	}
	if v.isTemplate() {
		s.mu.Unlock()
		return fmt.Errorf("you can't start a vm if it's a template\n")
	}
	if !skipLock {
		if err := checkLock(v); err != nil {
			s.mu.Unlock()
			return err
		}
	}
	if v.running {
		s.mu.Unlock()
		return fmt.Errorf("VM %d already running\n", v.vmid)
	}
	s.applyPendingLocked(v)
	if err := s.preflightLocked(l, v); err != nil {
		s.mu.Unlock()
		return err
	}
	if err := s.generateCloudInitLocked(v); err != nil {
		s.mu.Unlock()
		return err
	}
	s.mu.Unlock()

	if err := s.sleep(ctx, startDuration); err != nil {
		return err
	}

	s.mu.Lock()
	n := s.node(v.node)
	need := s.memoryMiB(v.conf)
	if free := n.spec.MemoryMiB - s.nodeUsedMemLocked(v.node); need > free || !n.online {
		s.mu.Unlock()
		l.Logf("kvm: cannot set up guest memory 'pc.ram': Cannot allocate memory")
		return fmt.Errorf("start failed: QEMU exited with code 1\n")
	}
	if v.running {
		s.mu.Unlock()
		return fmt.Errorf("VM %d already running\n", v.vmid)
	}
	v.running, v.startedAt, v.memoryMiB = true, time.Now(), need
	v.gen++
	gen := v.gen
	v.runConf = copyMap(v.conf)
	info := s.bootInfoLocked(v)
	gctx, cancel := context.WithCancel(s.ctx)
	v.stopGuest = cancel
	booter := s.opts.Booter
	s.mu.Unlock()

	var g Guest
	if booter != nil {
		g = booter(gctx, info, &vmHost{s: s, v: v, gen: gen})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !v.running || gctx.Err() != nil || v.gen != gen {
		// Stopped while booting: this guest never belonged to a running qemu.
		if g != nil {
			go g.PowerOff()
		}
		return nil
	}
	v.guest = g
	if g == nil {
		s.logf("VM %d on %s started; nothing bootable, the guest idles", v.vmid, v.node)
	}
	return nil
}

// preflightLocked checks what kvm needs before it runs: volumes that exist
// and bridges that exist on the node (pve-bridge fails otherwise).
func (s *Server) preflightLocked(l *taskLog, v *vm) error {
	n := s.node(v.node)
	for _, k := range slices.Sorted(maps.Keys(v.conf)) {
		val := v.conf[k]
		prefix, idx, ok := keyIndex(k)
		switch {
		case isDriveKey(k):
			d, err := s.parseDrive(k, val)
			if err != nil {
				return err
			}
			f := d["file"]
			if f == "" || f == "none" || f == "cdrom" {
				continue
			}
			if _, err := s.volumeLocked(v.node, f); err != nil {
				return fmt.Errorf("volume '%s' does not exist\n", f)
			}
		case ok && prefix == "net":
			nic, err := s.confM.ParseProperty(k, val)
			if err != nil {
				return err
			}
			if b := nic["bridge"]; b != "" && !n.hasBridge(b) {
				l.Logf("bridge '%s' does not exist", b)
				l.Logf("kvm: -netdev type=tap,id=net%d,ifname=tap%di%d,script=/usr/libexec/qemu-server/pve-bridge,downscript=/usr/libexec/qemu-server/pve-bridgedown,vhost=on: network script /usr/libexec/qemu-server/pve-bridge failed with status 256", idx, v.vmid, idx)
				return fmt.Errorf("start failed: QEMU exited with code 1\n")
			}
		}
	}
	return nil
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// powerOffLocked ends qemu: the VM is stopped at once and its guest's
// context cancelled. It returns the guest, whose PowerOff the caller must
// call after releasing s.mu (a guest may call back into the lab), before it
// reports the VM stopped, so the guest's resources (its addresses) are free
// when the VM can start again.
func (s *Server) powerOffLocked(v *vm) Guest {
	g := v.guest
	if v.stopGuest != nil {
		v.stopGuest()
	}
	v.running, v.paused, v.guest, v.stopGuest, v.runConf, v.memoryMiB = false, false, nil, nil, nil, 0
	return g
}

// powerOff calls PowerOff on the guests powerOffLocked returned.
func powerOff(guests ...Guest) {
	for _, g := range guests {
		if g != nil {
			g.PowerOff()
		}
	}
}

func (s *Server) hStop(r *request) (any, error) {
	if err := rootOnlyParams(r, "skiplock", "keepActive", "migratedfrom", "stateuri", "targetstorage", "force-cpu"); err != nil {
		return nil, err
	}
	vmid, nodeName := r.vmid(), r.p["node"]
	skipLock := r.p["skiplock"] == "1"
	return s.vmTask(r, "qmstop", func(ctx context.Context, l *taskLog) error {
		return s.stopVM(ctx, l, nodeName, vmid, skipLock, false, 0, true)
	})
}

func (s *Server) hShutdown(r *request) (any, error) {
	if err := rootOnlyParams(r, "skiplock", "keepActive", "migratedfrom", "stateuri", "targetstorage", "force-cpu"); err != nil {
		return nil, err
	}
	vmid, nodeName := r.vmid(), r.p["node"]
	skipLock := r.p["skiplock"] == "1"
	timeout := 60
	if t, ok := r.p["timeout"]; ok {
		timeout, _ = strconv.Atoi(t)
	}
	force := r.p["forceStop"] == "1"
	// vm_shutdown: a paused guest cannot react to ACPI; with forceStop
	// qemu is stopped instead
	shutdown := true
	s.mu.Lock()
	if v, err := s.vmLocked(nodeName, vmid); err == nil && v.paused {
		if !force {
			s.mu.Unlock()
			return nil, fail(pausedMsg)
		}
		shutdown = false
	}
	s.mu.Unlock()
	return s.vmTask(r, "qmshutdown", func(ctx context.Context, l *taskLog) error {
		if !shutdown {
			l.Warnf("VM is paused - stop instead of shutdown")
		}
		return s.stopVM(ctx, l, nodeName, vmid, skipLock, shutdown, timeout, force)
	})
}

// stopVM is vm_stop/_do_vm_stop: a stopped VM is fine; a shutdown asks the
// guest and waits up to timeout seconds (scaled), then fails with "VM
// quit/powerdown failed - got timeout" or, with force, terminates qemu.
func (s *Server) stopVM(ctx context.Context, l *taskLog, nodeName string, vmid int, skipLock, shutdown bool, timeout int, force bool) error {
	unlock, err := s.lockVM(vmid, 10*time.Second)
	if err != nil {
		return err
	}
	defer unlock()
	s.mu.Lock()
	v, err := s.vmLocked(nodeName, vmid)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	if !skipLock {
		if err := checkLock(v); err != nil {
			s.mu.Unlock()
			return err
		}
	}
	if !v.running {
		s.mu.Unlock()
		return nil
	}
	g := v.guest
	s.mu.Unlock()
	if shutdown {
		// The timeout is scaled, but a guest gets at least two real seconds
		// to react; nothing booted never reacts, so waiting is pointless.
		d := time.Duration(float64(time.Duration(timeout)*time.Second) * s.opts.TimeScale)
		if g != nil && d < 2*time.Second {
			d = 2 * time.Second
		}
		sctx, cancel := context.WithTimeout(ctx, d)
		err := errors.New("no guest OS answers ACPI shutdown")
		if g != nil {
			err = g.Shutdown(sctx)
		} else {
			<-sctx.Done()
		}
		cancel()
		if err != nil {
			if !force {
				return fmt.Errorf("VM quit/powerdown failed - got timeout\n")
			}
			l.Warnf("VM still running - terminating now with SIGTERM")
		}
	} else if err := s.sleep(ctx, 500*time.Millisecond); err != nil {
		return err
	}
	s.mu.Lock()
	var off Guest
	if v.running {
		off = s.powerOffLocked(v)
	}
	s.mu.Unlock()
	powerOff(off)
	return nil
}

// hReboot is vm_reboot: the VM must run; it shuts down and qmeventd starts
// a new qemu, which applies pending changes.
func (s *Server) hReboot(r *request) (any, error) {
	vmid, nodeName := r.vmid(), r.p["node"]
	s.mu.Lock()
	v, err := s.vmLocked(nodeName, vmid)
	if err == nil && v.paused {
		err = fail(pausedMsg)
	}
	if err == nil && !v.running {
		err = fail("VM %d not running\n", vmid)
	}
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	timeout := 60
	if t, ok := r.p["timeout"]; ok {
		timeout, _ = strconv.Atoi(t)
	}
	return s.vmTask(r, "qmreboot", func(ctx context.Context, l *taskLog) error {
		if err := s.stopVM(ctx, l, nodeName, vmid, false, true, timeout, false); err != nil {
			return err
		}
		return s.startVM(ctx, l, v, false)
	})
}

// hReset is vm_reset: a hard reset of a running VM; qemu keeps running (no
// pending changes applied), the guest boots again.
func (s *Server) hReset(r *request) (any, error) {
	if err := rootOnlyParams(r, "skiplock"); err != nil {
		return nil, err
	}
	vmid, nodeName := r.vmid(), r.p["node"]
	s.mu.Lock()
	v, err := s.vmLocked(nodeName, vmid)
	if err == nil && !v.running {
		err = fail("VM %d not running\n", vmid)
	}
	if err == nil && r.p["skiplock"] != "1" {
		err = checkLock(v)
	}
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return s.vmTask(r, "qmreset", func(ctx context.Context, l *taskLog) error {
		s.mu.Lock()
		if !v.running {
			s.mu.Unlock()
			return fmt.Errorf("VM %d not running\n", vmid)
		}
		old := v.guest
		v.guest = nil
		info := s.bootInfoLockedWith(v, v.runConf)
		booter := s.opts.Booter
		var gctx context.Context
		if v.stopGuest != nil {
			v.stopGuest()
		}
		gctx, v.stopGuest = context.WithCancel(s.ctx)
		v.gen++
		gen := v.gen
		s.mu.Unlock()
		if old != nil {
			old.PowerOff()
		}
		var g Guest
		if booter != nil {
			g = booter(gctx, info, &vmHost{s: s, v: v, gen: gen})
		}
		s.mu.Lock()
		var pause Pauser
		if v.running && gctx.Err() == nil && v.gen == gen {
			v.guest = g
			if p, ok := g.(Pauser); ok && v.paused {
				pause = p // a reset leaves the vCPUs of a paused VM stopped
			}
		} else if g != nil {
			go g.PowerOff()
		}
		s.mu.Unlock()
		if pause != nil {
			pause.Pause() // not under s.mu: the guest takes its own locks
		}
		return nil
	})
}
