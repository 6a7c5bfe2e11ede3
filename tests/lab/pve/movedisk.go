package pve

import (
	"context"
	"fmt"
	"time"
)

// hMoveDisk is move_vm_disk (qemu-server src/PVE/API2/Qemu.pm) for a move
// to another storage: the disk is copied (live with drive-mirror when the
// VM runs), the config points at the copy, and the source becomes unusedN
// or, with delete=1, is freed. Reassigning a disk to another VM
// (target-vmid) is not implemented by the lab.
func (s *Server) hMoveDisk(r *request) (any, error) {
	vmid, nodeName, disk, storeID := r.vmid(), r.p["node"], r.p["disk"], r.p["storage"]
	if r.p["target-vmid"] != "" && storeID != "" {
		msg := "either set 'storage' or 'target-vmid', but not both"
		return nil, paramError(map[string]string{"target-vmid": msg, "storage": msg})
	}
	if r.p["target-vmid"] != "" {
		return nil, &apiError{code: 501, msg: "lab: reassigning a disk to another VM (target-vmid) is not implemented\n"}
	}
	if storeID == "" {
		msg := "both 'storage' and 'target-vmid' missing, either needs to be set"
		return nil, paramError(map[string]string{"target-vmid": msg, "storage": msg})
	}
	m := moveDisk{vmid: vmid, node: nodeName, disk: disk, storage: storeID, digest: r.p["digest"], format: r.p["format"]}
	del, format := r.p["delete"] == "1", m.format
	check := func() (*vm, map[string]string, *volume, *storage, error) { return s.checkMoveDiskLocked(m) }
	s.mu.Lock()
	err := s.checkLocked(r.user, "/storage/"+storeID, "Datastore.AllocateSpace")
	if err == nil {
		_, _, _, _, err = check()
	}
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return s.vmTask(r, "qmmove", func(ctx context.Context, l *taskLog) error {
		unlock, err := s.lockVM(vmid, 10*time.Second)
		if err != nil {
			return err
		}
		defer unlock()
		s.mu.Lock()
		_, _, src, _, err := check()
		s.mu.Unlock()
		if err != nil {
			return err
		}
		l.Logf("copying volume '%s' from current storage '%s' to target storage '%s'", src.volid(), src.storage, storeID)
		if err := s.sleep(ctx, time.Second+time.Duration(src.size/(200<<20))*time.Second); err != nil {
			return fmt.Errorf("storage migration failed: interrupted by signal\n")
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		v, d, src, st, err := check()
		if err != nil {
			return err
		}
		f := format
		if st.spec.Type == "lvmthin" {
			f = "raw"
		} else if f == "" {
			f = "qcow2"
		}
		name := s.freeDiskNameLocked(st, vmid, f, v.isTemplate())
		if isCloudInitVolume(src.volid()) {
			name = fmt.Sprintf("vm-%d-cloudinit", vmid)
			if st.spec.Type == "dir" {
				name = fmt.Sprintf("%d/%s.%s", vmid, name, f)
			}
		}
		nv, err := s.allocVolumeLocked(st, vmid, name, f, src.size)
		if err != nil {
			return fmt.Errorf("storage migration failed: %s", errorText(err))
		}
		nv.image, nv.written = src.image, src.written
		d["file"] = nv.volid()
		v.conf[disk] = s.printDrive(disk, d)
		if del {
			l.Logf("removing source volume '%s' after successful copy", src.volid())
			delete(s.storageOf(v.node, src.storage).volumes, src.name)
		} else if k := v.addUnused(src.volid()); k != "" {
			l.Logf("adding source volume '%s' as '%s' to config", src.volid(), k)
		}
		return nil
	})
}

// moveDisk is a move_vm_disk call's parameters.
type moveDisk struct {
	vmid                                int
	node, disk, storage, digest, format string
}

// checkMoveDiskLocked is move_vm_disk's checks, made before the task starts
// and again in it: the VM, its disk and the disk's volume, the target storage.
func (s *Server) checkMoveDiskLocked(m moveDisk) (*vm, map[string]string, *volume, *storage, error) {
	v, err := s.vmLocked(m.node, m.vmid)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if err := checkLock(v); err != nil {
		return nil, nil, nil, nil, err
	}
	if m.digest != "" && m.digest != v.digest() {
		return nil, nil, nil, nil, fail("detected modified configuration - file changed by other user? Try again.\n")
	}
	val, ok := v.conf[m.disk]
	if !ok {
		return nil, nil, nil, nil, fail("disk '%s' does not exist\n", m.disk)
	}
	d, err := s.parseDrive(m.disk, val)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if d["file"] == "" {
		return nil, nil, nil, nil, fail("disk '%s' has no associated volume\n", m.disk)
	}
	if d["media"] == "cdrom" && !isCloudInitVolume(d["file"]) {
		return nil, nil, nil, nil, fail("you can't move a cdrom\n")
	}
	src, err := s.volumeLocked(v.node, d["file"])
	if err != nil {
		return nil, nil, nil, nil, fail("%s", errorText(err))
	}
	if src.storage == m.storage && (m.format == "" || m.format == src.format) {
		return nil, nil, nil, nil, fail("you can't move to the same storage with same format\n")
	}
	st, err := s.storageLocked(v.node, m.storage)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if !st.hasContent("images") {
		return nil, nil, nil, nil, param1("storage", fmt.Sprintf("storage '%s' does not support vm images", m.storage))
	}
	return v, d, src, st, nil
}

func isCloudInitVolume(volid string) bool {
	return len(volid) > 10 && volid[len(volid)-10:] == "-cloudinit" || containsFold(volid, "-cloudinit.")
}
