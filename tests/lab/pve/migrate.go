package pve

import "fmt"

// MigrateVM moves a stopped VM to another node out of band, as an offline
// `qm migrate <vmid> <target>` or an HA relocation does: its config moves to
// nodes/<target>/qemu-server and its disks to the same storage on the
// target (qemu-server PVE/QemuMigrate.pm; local disks are copied, and the
// target needs a storage of the same name). A VM that runs would need an
// online migration, which the lab does not simulate.
func (s *Server) MigrateVM(vmid int, target string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.vms[vmid]
	switch {
	case !ok:
		return fmt.Errorf("lab: VM %d does not exist", vmid)
	case v.running:
		return fmt.Errorf("lab: VM %d runs; the lab migrates stopped VMs only", vmid)
	case s.node(target) == nil:
		return fmt.Errorf("lab: no node %q", target)
	case v.node == target:
		return fmt.Errorf("lab: VM %d is already on node %s", vmid, target)
	}
	for volid := range s.referencedVolumes(v) {
		vol, err := s.volumeLocked(v.node, volid)
		if err != nil {
			continue // "none", "cdrom" and the like
		}
		if vol.owner != vmid {
			return fmt.Errorf("lab: VM %d uses %s of node %s, which it does not own: migration would "+
				"lose it (PVE: \"can't migrate local cdrom\" and the like)", vmid, volid, v.node)
		}
	}
	vols := s.vmVolumesLocked(v)
	for _, vol := range vols {
		if s.node(target).storage(vol.storage) == nil {
			return fmt.Errorf("lab: storage '%s' is not available on node '%s'", vol.storage, target)
		}
	}
	for _, vol := range vols {
		delete(s.storageOf(v.node, vol.storage).volumes, vol.name)
		s.storageOf(target, vol.storage).volumes[vol.name] = vol
	}
	v.node = target
	return nil
}
