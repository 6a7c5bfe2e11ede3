package pve

import (
	"maps"
	"slices"
	"strings"
)

// Hot-plug rules follow qemu-server src/PVE/QemuServer.pm
// (vmconfig_hotplug_pending, vmconfig_update_net, vmconfig_update_disk,
// vmconfig_update_agent).

// fastPlug are options that never need the VM restarted ($fast_plug_option
// plus the cloud-init options).
var fastPlug = map[string]bool{
	"description": true, "hookscript": true, "lock": true, "migrate_downtime": true, "migrate_speed": true,
	"name": true, "onboot": true, "protection": true, "shares": true, "startup": true, "tags": true,
	"vmstatestorage": true, "ciuser": true, "cipassword": true, "citype": true, "ciupgrade": true,
	"cicustom": true, "searchdomain": true, "nameserver": true, "sshkeys": true,
}

// hotplugFeatures is parse_hotplug_features (default network,disk,usb).
func hotplugFeatures(conf map[string]string) map[string]bool {
	h, ok := conf["hotplug"]
	if !ok || h == "1" {
		h = "network,disk,usb"
	}
	out := map[string]bool{}
	if h == "0" {
		return out
	}
	for _, f := range splitList(h) {
		out[f] = true
	}
	return out
}

// hotplugPendingLocked is vmconfig_hotplug_pending: what a running VM takes
// at once; the rest stays pending until the next start. Memory and CPU need
// their hotplug feature; cores, sockets, CPU type, BIOS, machine and boot
// order always wait for a restart.
func (s *Server) hotplugPendingLocked(v *vm, u *configUpdate) error {
	hp := hotplugFeatures(v.conf)
	for _, opt := range slices.Sorted(maps.Keys(v.pending)) {
		p, _, _ := keyIndex(opt)
		if fastPlug[opt] || p == "ipconfig" {
			v.conf[opt] = v.pending[opt]
			delete(v.pending, opt)
		}
	}
	for _, opt := range slices.Sorted(maps.Keys(v.delete)) {
		if s.hotUnplugLocked(v, opt, hp) {
			delete(v.conf, opt)
			delete(v.delete, opt)
		}
	}
	for _, opt := range slices.Sorted(maps.Keys(v.pending)) {
		val := v.pending[opt]
		if !s.hotpluggable(v, opt, val, hp) {
			continue
		}
		if isDriveKey(opt) {
			if old, ok := v.conf[opt]; ok && strings.SplitN(old, ",", 2)[0] != strings.SplitN(val, ",", 2)[0] {
				v.conf[opt] = val
				s.registerUnusedLocked(v, old)
			}
		}
		v.conf[opt] = val
		delete(v.pending, opt)
	}
	return nil
}

// hotUnplugLocked reports whether the pending deletion of opt applies to the
// running VM now; an unplugged disk's volume is freed (force) or kept as an
// unusedN entry.
func (s *Server) hotUnplugLocked(v *vm, opt string, hp map[string]bool) bool {
	p, _, _ := keyIndex(opt)
	switch {
	case fastPlug[opt] || p == "ipconfig" || opt == "cpuunits" || opt == "cpulimit":
		return true
	case opt == "balloon":
		return v.conf["balloon"] != "0"
	case p == "net":
		return hp["network"]
	case isDriveKey(opt):
		if !hp["disk"] || (p != "scsi" && p != "virtio") {
			return false
		}
		if v.delete[opt] {
			if vol, err := s.volumeLocked(v.node, strings.SplitN(v.conf[opt], ",", 2)[0]); err == nil && vol.owner == v.vmid {
				delete(s.storageOf(v.node, vol.storage).volumes, vol.name)
			}
		} else {
			old := v.conf[opt]
			delete(v.conf, opt)
			s.registerUnusedLocked(v, old)
		}
		return true
	case opt == "memory":
		return hp["memory"]
	case opt == "vcpus":
		return hp["cpu"]
	}
	return false
}

// hotpluggable reports whether opt's pending value val applies to the
// running VM now.
func (s *Server) hotpluggable(v *vm, opt, val string, hp map[string]bool) bool {
	p, _, _ := keyIndex(opt)
	switch {
	case opt == "cpuunits" || opt == "cpulimit":
		return true
	case opt == "balloon":
		return (v.conf["balloon"] != "0") == (val != "0")
	case p == "net":
		return hp["network"] || s.netChangeWithoutHotplug(opt, v.conf[opt], val)
	case isDriveKey(opt):
		return opt != "efidisk0" && opt != "tpmstate0" && s.diskHotpluggable(opt, v.conf[opt], val, hp)
	case opt == "memory":
		return hp["memory"]
	case opt == "vcpus":
		return hp["cpu"]
	case opt == "agent":
		return s.agentChangeHotpluggable(v.conf["agent"], val)
	}
	return false
}

// netChangeWithoutHotplug: bridge, tag, rate, firewall and link state can
// change on a running NIC without hot-plugging it (vmconfig_update_net).
func (s *Server) netChangeWithoutHotplug(key, oldVal, newVal string) bool {
	if oldVal == "" {
		return false
	}
	o, err1 := s.confM.ParseProperty(key, oldVal)
	n, err2 := s.confM.ParseProperty(key, newVal)
	if err1 != nil || err2 != nil {
		return false
	}
	return o["model"] == n["model"] && o["macaddr"] == n["macaddr"] && o["queues"] == n["queues"] && o["mtu"] == n["mtu"]
}

// diskHotpluggable: new SCSI/VirtIO disks and CD-ROM media changes apply to
// a running VM; IDE/SATA hard disks need a restart.
func (s *Server) diskHotpluggable(key, oldVal, newVal string, hp map[string]bool) bool {
	n, err := s.parseDrive(key, newVal)
	if err != nil {
		return false
	}
	if n["media"] == "cdrom" {
		return true
	}
	p, _, _ := keyIndex(key)
	if oldVal != "" {
		o, err := s.parseDrive(key, oldVal)
		if err == nil && o["file"] == n["file"] {
			return true // option changes of the same volume (size, cache...)
		}
	}
	return hp["disk"] && (p == "scsi" || p == "virtio")
}

// agentChangeHotpluggable is vmconfig_update_agent: only fstrim_cloned_disks
// changes apply to a running VM.
func (s *Server) agentChangeHotpluggable(oldVal, newVal string) bool {
	if oldVal == "" {
		return false
	}
	o, err1 := s.confM.ParseProperty("agent", oldVal)
	n, err2 := s.confM.ParseProperty("agent", newVal)
	if err1 != nil || err2 != nil {
		return false
	}
	for _, k := range []string{"enabled", "freeze-fs", "type"} {
		if o[k] != n[k] {
			return false
		}
	}
	return true
}
