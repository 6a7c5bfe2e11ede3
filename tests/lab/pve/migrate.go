package pve

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// Migration follows qemu-server (9.1.3, commit e781d971):
// src/PVE/API2/Qemu.pm migrate_vm_precondition and migrate_vm, and
// src/PVE/QemuMigrate.pm prepare, scan_local_volumes, phase1 (config lock
// "migrate", local disks copied to the same storage on the target), phase3
// (the config moves to nodes/<target>/qemu-server). All lab storages are
// local (not shared), so every disk is copied.

// localResources are the config keys check_local_resources finds: passed
// through host devices block a migration.
func localResources(conf map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		prefix, _, ok := keyIndex(k)
		switch {
		case !ok:
		case prefix == "hostpci" && !strings.Contains(conf[k], "mapping="):
			out = append(out, k)
		case prefix == "usb" && !strings.Contains(conf[k], "mapping=") && !strings.Contains(strings.ToLower(conf[k]), "spice"):
			out = append(out, k)
		case (prefix == "serial" || prefix == "parallel") && strings.HasPrefix(conf[k], "/dev/"):
			out = append(out, k)
		}
	}
	return out
}

// hMigratePrecondition is GET .../migrate: whether the VM runs, the nodes it
// may go to, its local disks and local resources.
func (s *Server) hMigratePrecondition(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.vmLocked(r.p["node"], r.vmid())
	if err != nil {
		return nil, err
	}
	if err := checkLock(v); err != nil {
		return nil, err
	}
	allowed := []string{}
	notAllowed := map[string]any{}
	for _, n := range s.nodes {
		if n.spec.Name == v.node {
			continue
		}
		var missing []string
		for _, vol := range s.vmVolumesLocked(v) {
			if n.storage(vol.storage) == nil && !slices.Contains(missing, vol.storage) {
				missing = append(missing, vol.storage)
			}
		}
		if len(missing) > 0 {
			sort.Strings(missing)
			notAllowed[n.spec.Name] = map[string]any{"unavailable_storages": missing}
			continue
		}
		allowed = append(allowed, n.spec.Name)
	}
	local := []map[string]any{}
	refs := s.referencedVolumes(v)
	for _, vol := range s.vmVolumesLocked(v) {
		key, attached := refs[vol.volid()]
		e := map[string]any{"volid": vol.volid(), "size": vol.size, "cdrom": 0, "is_unused": boolInt(!attached || strings.HasPrefix(key, "unused"))}
		if attached {
			e["drivename"] = key
		}
		local = append(local, e)
	}
	for _, key := range slices.Sorted(maps.Keys(v.conf)) {
		if d, err := s.parseDrive(key, v.conf[key]); err == nil && isDriveKey(key) && d["media"] == "cdrom" &&
			d["file"] != "none" && !strings.Contains(d["file"], "cloudinit") {
			local = append(local, map[string]any{"volid": d["file"], "cdrom": 1, "drivename": key})
		}
	}
	return map[string]any{
		"running": boolInt(v.running), "allowed_nodes": allowed, "not_allowed_nodes": notAllowed,
		"local_disks": local, "local_resources": localResources(v.conf), "mapped-resources": []string{},
		"mapped-resource-info": map[string]any{}, "has-dbus-vmstate": 1,
	}, nil
}

// hMigrate is POST .../migrate: early checks, then a qmigrate task. A
// running VM needs online=1 and, its disks being local, with-local-disks=1
// (a live migration with storage migration); the guest keeps running.
func (s *Server) hMigrate(r *request) (any, error) {
	vmid, nodeName, target := r.vmid(), r.p["node"], r.p["target"]
	if target == nodeName {
		return nil, param1("target", "target is local node.")
	}
	if err := rootOnlyParams(r, "force", "migration_type", "migration_network"); err != nil {
		return nil, err
	}
	if _, ok := r.p["targetstorage"]; ok {
		return nil, &apiError{code: 501, msg: "lab: storage mapping (targetstorage) is not implemented\n"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.node(target) == nil {
		return nil, fail("no such cluster node '%s'\n", target)
	}
	v, err := s.vmLocked(nodeName, vmid)
	if err != nil {
		return nil, err
	}
	if err := checkLock(v); err != nil {
		return nil, err
	}
	online := r.p["online"] == "1"
	if v.running && !online {
		return nil, fail("can't migrate running VM without --online\n")
	}
	// check_storage_availability
	for _, vol := range s.vmVolumesLocked(v) {
		if _, err := s.storageLocked(target, vol.storage); err != nil {
			return nil, err
		}
	}
	withLocal := r.p["with-local-disks"] == "1"
	return s.startTask(nodeName, "qmigrate", r.p["vmid"], r.user, func(ctx context.Context, l *taskLog) error {
		start := time.Now()
		err := s.migrate(ctx, l, vmid, nodeName, target, withLocal)
		d := time.Since(start).Round(time.Second)
		dur := fmt.Sprintf("%02d:%02d:%02d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
		if err != nil {
			l.Logf("ERROR: migration aborted (duration %s): %s", dur, strings.TrimRight(errorText(err), "\n"))
			return fmt.Errorf("migration aborted\n")
		}
		l.Logf("migration finished successfully (duration %s)", dur)
		return nil
	}), nil
}

// migrate is the worker: prepare, scan and copy the local volumes, move
// the config. Errors are what QemuMigrate dies with.
func (s *Server) migrate(ctx context.Context, l *taskLog, vmid int, from, target string, withLocal bool) error {
	unlock, err := s.lockVM(vmid, 10*time.Second)
	if err != nil {
		return err
	}
	defer unlock()
	s.mu.Lock()
	v, err := s.vmLocked(from, vmid)
	if err == nil {
		err = checkLock(v)
	}
	if err != nil {
		s.mu.Unlock()
		return err
	}
	running := v.running
	if !s.node(target).online {
		// prepare's ssh test to the target
		s.mu.Unlock()
		return fmt.Errorf("Can't connect to destination address using public key\n")
	}
	if devs := localResources(v.conf); len(devs) > 0 {
		s.mu.Unlock()
		return fmt.Errorf("can't migrate VM which uses local devices: %s\n", strings.Join(devs, ", "))
	}
	l.Logf("starting migration of VM %d to node '%s' (%s)", vmid, target, s.nodeIPLocked(target))
	v.conf["lock"] = "migrate"
	problems, vols := s.scanVolumesLocked(l, v, target, withLocal)
	if problems != "" {
		delete(v.conf, "lock") // phase1_cleanup
		s.mu.Unlock()
		l.Logf("ERROR: Problem found while scanning volumes - %s", strings.TrimRight(problems, "\n"))
		return fmt.Errorf("Problem found while scanning volumes - %s", problems)
	}
	var total int64
	for _, vol := range vols {
		total += vol.size
	}
	s.mu.Unlock()
	if len(vols) > 0 {
		l.Logf("copying local disk images")
	}
	if running {
		l.Logf("starting VM %d on remote node '%s'", vmid, target)
		l.Logf("starting storage migration")
	}
	// 200 MiB/s, as the lab's disk moves
	if err := s.sleep(ctx, time.Second+time.Duration(total/(200<<20))*time.Second); err != nil {
		s.mu.Lock()
		delete(v.conf, "lock")
		s.mu.Unlock()
		return fmt.Errorf("interrupted by signal\n")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, vol := range vols {
		l.Logf("volume '%s' is '%s' on the target", vol.volid(), vol.volid())
	}
	s.moveVMLocked(v, target)
	delete(v.conf, "lock")
	if running {
		l.Logf("migration status: completed")
	}
	return nil
}

// scanVolumesLocked is scan_local_volumes: the VM's volumes, each copied
// to the same storage on the target. What cannot be migrated is logged as
// a warning and makes the scan fail ("can't migrate VM - check log").
func (s *Server) scanVolumesLocked(l *taskLog, v *vm, target string, withLocal bool) (string, []*volume) {
	refs := s.referencedVolumes(v)
	var vols []*volume
	bad := map[string]string{}
	for volid, key := range refs {
		d, err := s.parseDrive(key, firstNonEmpty(v.conf[key], v.pending[key]))
		if err == nil && d["media"] == "cdrom" && !strings.Contains(volid, "cloudinit") {
			switch {
			case volid == "cdrom":
				bad[volid] = "can't migrate local cdrom drive"
			case volid != "none":
				bad[volid] = "local cdrom image"
			}
			continue
		}
		vol, err := s.volumeLocked(v.node, volid)
		if err != nil {
			continue
		}
		if vol.owner != v.vmid {
			bad[volid] = fmt.Sprintf("owned by other VM (owner = VM %d)", vol.owner)
		}
	}
	for _, vol := range s.vmVolumesLocked(v) {
		if s.node(target).storage(vol.storage) == nil {
			bad[vol.volid()] = fmt.Sprintf("storage '%s' is not available on node '%s'", vol.storage, target)
			continue
		}
		st := s.storageOf(v.node, vol.storage)
		for _, other := range st.volumes {
			if other.parent == vol.name {
				bad[vol.volid()] = "referenced by linked clone(s)"
			}
		}
		key, attached := refs[vol.volid()]
		switch {
		case strings.Contains(vol.name, "cloudinit"):
			l.Logf("found generated disk '%s' (in current VM config)", vol.volid())
		case attached && !strings.HasPrefix(key, "unused"):
			l.Logf("found local disk '%s' (attached)", vol.volid())
			if v.running && !withLocal {
				bad[vol.volid()] = "can't live migrate attached local disks without with-local-disks option"
			}
		default:
			l.Logf("found local disk '%s' (unused)", vol.volid())
		}
		vols = append(vols, vol)
	}
	if len(bad) == 0 {
		for _, vol := range vols {
			if vol.parent != "" {
				return fmt.Sprintf("can't migrate '%s' as it's a clone of '%s'", vol.volid(), vol.parent), nil
			}
		}
		return "", vols
	}
	for _, volid := range slices.Sorted(maps.Keys(bad)) {
		l.Warnf("can't migrate local disk '%s': %s", volid, bad[volid])
	}
	return "can't migrate VM - check log\n", nil
}

// moveVMLocked moves a VM's config and disks to target.
func (s *Server) moveVMLocked(v *vm, target string) {
	for _, vol := range s.vmVolumesLocked(v) {
		delete(s.storageOf(v.node, vol.storage).volumes, vol.name)
		s.storageOf(target, vol.storage).volumes[vol.name] = vol
	}
	v.node = target
}

// nodeIPLocked is the address /cluster/status gives a node.
func (s *Server) nodeIPLocked(name string) string {
	for i, n := range s.nodes {
		if n.spec.Name == name {
			return fmt.Sprintf("127.0.0.%d", i+1)
		}
	}
	return ""
}

// MigrateVM moves a stopped VM to another node out of band, as an offline
// `qm migrate <vmid> <target>` or an HA relocation does: the checks of a
// migration, then its config and disks move to target.
func (s *Server) MigrateVM(vmid int, target string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.vms[vmid]
	switch {
	case !ok:
		return fmt.Errorf("lab: VM %d does not exist", vmid)
	case v.running:
		return fmt.Errorf("lab: VM %d runs; MigrateVM moves stopped VMs (POST .../migrate with online=1 moves running ones)", vmid)
	case s.node(target) == nil:
		return fmt.Errorf("lab: no node %q", target)
	case v.node == target:
		return fmt.Errorf("lab: VM %d is already on node %s", vmid, target)
	}
	if problems, _ := s.scanVolumesLocked(nil, v, target, false); problems != "" {
		return fmt.Errorf("lab: VM %d cannot migrate to %s: %s", vmid, target, strings.TrimSpace(problems))
	}
	s.moveVMLocked(v, target)
	return nil
}
