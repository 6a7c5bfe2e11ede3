package pve

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pveapi"
)

// hDestroy is destroy_vm: early checks (exists, protection, not running),
// then a qmdestroy worker that frees the VM's disks (with
// destroy-unreferenced-disks also those not in the config), removes it from
// pools (purge) and finally the config.
func (s *Server) hDestroy(r *request) (any, error) {
	vmid, nodeName := r.vmid(), r.p["node"]
	skipLock := r.p["skiplock"] == "1"
	if skipLock && r.user != "root@pam" {
		return nil, param1("skiplock", "Only root may use this option.")
	}
	purge, unref := r.p["purge"] == "1", r.p["destroy-unreferenced-disks"] == "1"
	early := func() (*vm, error) {
		v, err := s.vmLocked(nodeName, vmid)
		if err != nil {
			return nil, err
		}
		if v.conf["protection"] == "1" {
			return nil, fail("can't remove VM %d - protection mode enabled\n", vmid)
		}
		if v.running {
			return nil, fail("VM %d is running - destroy failed\n", vmid)
		}
		return v, nil
	}
	s.mu.Lock()
	_, err := early()
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return s.vmTask(r, "qmdestroy", func(ctx context.Context, l *taskLog) error {
		unlock, err := s.lockVM(vmid, 10*time.Second)
		if err != nil {
			return err
		}
		defer unlock()
		if err := s.sleep(ctx, time.Second); err != nil {
			return err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		v, err := early()
		if err != nil {
			return err
		}
		if !skipLock {
			if err := checkLock(v); err != nil {
				return err
			}
		}
		refs := s.referencedVolumes(v)
		for _, vol := range s.vmVolumesLocked(v) {
			if _, ok := refs[vol.volid()]; !ok && !unref {
				continue
			}
			st := s.storageOf(v.node, vol.storage)
			for _, other := range st.volumes {
				if other.parent == vol.name {
					return fmt.Errorf("base volume '%s' is still in use by linked cloned\n", vol.volid())
				}
			}
		}
		for _, vol := range s.vmVolumesLocked(v) {
			if _, ok := refs[vol.volid()]; !ok && !unref {
				continue
			}
			delete(s.storageOf(v.node, vol.storage).volumes, vol.name)
			l.Logf("Removed volume '%s'", vol.volid())
		}
		s.removeVMAccessLocked(vmid)
		if purge {
			l.Logf("purging VM %d from related configurations..", vmid)
		}
		delete(s.vms, vmid)
		return nil
	})
}

var resizeRE = regexp.MustCompile(`^(\+)?(\d+(\.\d+)?)([KMGT])?$`)

// hResize is resize_vm (asynchronous since PVE 8): grow only.
func (s *Server) hResize(r *request) (any, error) {
	vmid, nodeName, disk, sizeStr := r.vmid(), r.p["node"], r.p["disk"], r.p["size"]
	digest := r.p["digest"]
	skipLock := r.p["skiplock"] == "1"
	if skipLock && r.user != "root@pam" {
		return nil, param1("skiplock", "Only root may use this option.")
	}
	return s.vmTask(r, "resize", func(ctx context.Context, l *taskLog) error {
		unlock, err := s.lockVM(vmid, 10*time.Second)
		if err != nil {
			return err
		}
		defer unlock()
		s.mu.Lock()
		defer s.mu.Unlock()
		v, err := s.vmLocked(nodeName, vmid)
		if err != nil {
			return err
		}
		if digest != "" && digest != v.digest() {
			return fmt.Errorf("checksum mismatch (file change by other user?)\n")
		}
		if !skipLock {
			if err := checkLock(v); err != nil {
				return err
			}
		}
		val, ok := v.conf[disk]
		if !ok {
			return fmt.Errorf("disk '%s' does not exist\n", disk)
		}
		d, err := s.parseDrive(disk, val)
		if err != nil {
			return err
		}
		if d["file"] == "" || d["file"] == "none" {
			return fmt.Errorf("disk '%s' has no associated volume\n", disk)
		}
		if d["media"] == "cdrom" {
			return fmt.Errorf("you can't resize a cdrom\n")
		}
		vol, err := s.volumeLocked(v.node, d["file"])
		if err != nil {
			return fmt.Errorf("Could not determine current size of volume '%s'\n", d["file"])
		}
		m := resizeRE.FindStringSubmatch(sizeStr)
		if m == nil {
			return fmt.Errorf("internal error\n")
		}
		f, _ := strconv.ParseFloat(m[2], 64)
		switch m[4] {
		case "K":
			f *= 1 << 10
		case "M":
			f *= 1 << 20
		case "G":
			f *= 1 << 30
		case "T":
			f *= 1 << 40
		}
		newSize := int64(f)
		if m[1] == "+" {
			newSize += vol.size
		}
		if newSize < vol.size {
			return fmt.Errorf("shrinking disks is not supported\n")
		}
		if newSize == vol.size {
			return nil
		}
		st := s.storageOf(v.node, vol.storage)
		if st.spec.Type == "dir" && st.used()-vol.size+newSize > st.total() {
			return fmt.Errorf("qemu-img: Could not resize image: No space left on device\n")
		}
		vol.size = newSize
		d["size"] = pveapi.FormatSize(newSize)
		v.conf[disk] = s.printDrive(disk, d)
		l.Logf("update VM %d: resize --disk %s --size %s", vmid, disk, sizeStr)
		return nil
	})
}

// hTemplate converts a stopped VM into a template: its disks become base
// volumes (vdisk_create_base renames vm-... to base-...).
func (s *Server) hTemplate(r *request) (any, error) {
	vmid, nodeName, onlyDisk := r.vmid(), r.p["node"], r.p["disk"]
	check := func() (*vm, error) {
		v, err := s.vmLocked(nodeName, vmid)
		if err != nil {
			return nil, err
		}
		if err := checkLock(v); err != nil {
			return nil, err
		}
		if v.isTemplate() && onlyDisk == "" {
			return nil, fail("you can't convert a template to a template\n")
		}
		if v.running {
			return nil, fail("you can't convert a VM to template if VM is running\n")
		}
		return v, nil
	}
	s.mu.Lock()
	_, err := check()
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return s.vmTask(r, "qmtemplate", func(ctx context.Context, l *taskLog) error {
		unlock, err := s.lockVM(vmid, 10*time.Second)
		if err != nil {
			return err
		}
		defer unlock()
		s.mu.Lock()
		defer s.mu.Unlock()
		v, err := check()
		if err != nil {
			return err
		}
		v.conf["template"] = "1"
		for _, k := range slices.Sorted(maps.Keys(v.conf)) {
			if !isDriveKey(k) || (onlyDisk != "" && k != onlyDisk) {
				continue
			}
			d, err := s.parseDrive(k, v.conf[k])
			if err != nil || d["media"] == "cdrom" {
				continue
			}
			vol, err := s.volumeLocked(v.node, d["file"])
			if err != nil {
				return err
			}
			st := s.storageOf(v.node, vol.storage)
			newName := strings.Replace(vol.name, fmt.Sprintf("vm-%d-", vmid), fmt.Sprintf("base-%d-", vmid), 1)
			if newName == vol.name {
				continue
			}
			if _, exists := st.volumes[newName]; exists {
				return fmt.Errorf("rename volume '%s' failed - target exists\n", vol.volid())
			}
			delete(st.volumes, vol.name)
			vol.name = newName
			st.volumes[newName] = vol
			d["file"] = vol.volid()
			v.conf[k] = s.printDrive(k, d)
			l.Logf("%s: converted '%s' to base volume", k, vol.volid())
		}
		return nil
	})
}

// hUnlink is unlink: detach (and with force, delete) disks.
func (s *Server) hUnlink(r *request) (any, error) {
	u := configUpdate{params: map[string]string{}, reverts: map[string]bool{}, force: r.p["force"] == "1"}
	u.deletes = append(u.deletes, splitList(r.p["idlist"])...)
	vmid, nodeName := r.vmid(), r.p["node"]
	unlock, err := s.lockVM(vmid, 10*time.Second)
	if err != nil {
		return nil, fail("%s", errorText(err))
	}
	defer unlock()
	if err := s.applyUpdate(nil, nodeName, vmid, &u); err != nil {
		if ae, ok := err.(*apiError); ok {
			return nil, ae
		}
		return nil, fail("%s", errorText(err))
	}
	return nil, nil
}

// hCloudInitPending is GET cloudinit: the cloud-init related keys that
// differ from what the drive was last generated with.
func (s *Server) hCloudInitPending(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.vmLocked(r.p["node"], r.vmid())
	if err != nil {
		return nil, err
	}
	cur := ciSnapshot(v.conf)
	gen := v.ciSnapshot
	if gen == nil {
		gen = cur
	}
	keys := map[string]bool{}
	for k := range cur {
		keys[k] = true
	}
	for k := range gen {
		keys[k] = true
	}
	out := []map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		e := map[string]any{"key": k}
		nv, inCur := cur[k]
		ov, inGen := gen[k]
		if inGen {
			e["value"] = ov
		}
		if inCur && (!inGen || nv != ov) {
			e["pending"] = nv
		}
		if inGen && !inCur {
			e["delete"] = 1
		}
		if k == "cipassword" {
			for _, f := range []string{"value", "pending"} {
				if _, ok := e[f]; ok {
					e[f] = "**********"
				}
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// hCloudInitRegenerate is PUT cloudinit: regenerate the drive now.
func (s *Server) hCloudInitRegenerate(r *request) (any, error) {
	vmid, nodeName := r.vmid(), r.p["node"]
	unlock, err := s.lockVM(vmid, 10*time.Second)
	if err != nil {
		return nil, fail("%s", errorText(err))
	}
	defer unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.vmLocked(nodeName, vmid)
	if err != nil {
		return nil, err
	}
	if err := s.generateCloudInitLocked(v); err != nil {
		return nil, fail("%s", errorText(err))
	}
	return nil, nil
}

// hCloudInitDump is GET cloudinit/dump: the files as generated from the
// current config (the password masked in user-data).
func (s *Server) hCloudInitDump(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.vmLocked(r.p["node"], r.vmid())
	if err != nil {
		return nil, err
	}
	user := s.cloudInitUserData(v.conf, v.vmid, false)
	network, err := s.cloudInitNetwork(v.conf)
	if err != nil {
		return nil, fail("%s", errorText(err))
	}
	switch r.p["type"] {
	case "user":
		return s.cloudInitUserData(v.conf, v.vmid, true), nil
	case "network":
		return network, nil
	default:
		return nocloudMetadata(user, network), nil
	}
}
