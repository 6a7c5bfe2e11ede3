package pve

// GuestPower is implemented by the DiskWriter a booted guest receives: a
// guest that turns itself off (a Talos shutdown, or a reset without reboot)
// says so, and qemu stops as it does when the guest powers off (the VM's
// status becomes stopped).
type GuestPower interface {
	PoweredOff()
}

// PoweredOff stops the VM's qemu after its guest powered off.
func (d *diskWriter) PoweredOff() {
	s := d.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.vms[d.vmid]; ok && v.running {
		s.powerOffLocked(v)
	}
}
