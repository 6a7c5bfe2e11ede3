package pve

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// optionPrivs maps each config option to the privilege qemu-server asks for
// to set or delete it: src/PVE/API2/Qemu.pm (9.1.3, commit e781d971)
// $check_vm_modify_config_perm with its groups $cpuoptions,
// $memoryoptions, $hwtypeoptions, $generaloptions, $vmpoweroptions,
// $diskoptions ($cloudinitoptions, like ipconfigN, need VM.Config.Cloudinit
// or VM.Config.Network: cloudInitOptions). Options in no group are root@pam's
// only ("only root can set 'args' config"); API tokens are never root@pam.
var optionPrivs = map[string]string{}

var cloudInitOptions = map[string]bool{"cicustom": true, "cipassword": true, "citype": true, "ciuser": true,
	"ciupgrade": true, "nameserver": true, "searchdomain": true, "sshkeys": true}

func init() {
	for priv, group := range map[string]string{
		"VM.Config.CPU":     "cores cpu runningcpu cpulimit cpuunits numa smp sockets vcpus",
		"VM.Config.Memory":  "memory balloon shares allow-ksm",
		"VM.Config.HWType":  "acpi hotplug kvm machine runningmachine scsihw smbios1 tablet vga watchdog audio0 rng0",
		"VM.Config.Options": "agent autostart bios description keyboard localtime migrate_downtime migrate_speed name onboot ostype protection reboot startdate startup tdf template",
		"VM.PowerMgmt":      "freeze",
		"VM.Config.Disk":    "boot bootdisk vmstatestorage",
	} {
		for _, k := range strings.Fields(group) {
			optionPrivs[k] = priv
		}
	}
}

// checkModifyConfigLocked is $check_vm_modify_config_perm for the options in
// keys, set or deleted on VM vmid (created in pool, if any). Drives, cdrom,
// unusedN, serialN, usbN, hostpciN, virtiofsN and tags are checked where
// their values are known.
func (s *Server) checkModifyConfigLocked(user string, vmid int, pool string, keys []string) error {
	if user == "root@pam" {
		return nil
	}
	vmPerm := func(any bool, privs ...string) error { return s.checkVMLocked(user, vmid, pool, any, privs...) }
	for _, opt := range keys {
		prefix, _, indexed := keyIndex(opt)
		switch {
		case isDriveKey(opt), opt == "cdrom", opt == "tags":
		case indexed && (prefix == "unused" || prefix == "serial" || prefix == "usb" || prefix == "hostpci" || prefix == "virtiofs"):
		case indexed && prefix == "numa":
			if err := vmPerm(false, "VM.Config.CPU"); err != nil {
				return err
			}
		case optionPrivs[opt] != "":
			if err := vmPerm(false, optionPrivs[opt]); err != nil {
				return err
			}
			if opt == "startup" {
				// it changes how the host boots
				if err := s.checkLocked(user, "/", "Sys.Modify"); err != nil {
					return err
				}
			}
		case (indexed && prefix == "net") || opt == "running-nets-host-mtu":
			if err := vmPerm(false, "VM.Config.Network"); err != nil {
				return err
			}
		case cloudInitOptions[opt] || (indexed && prefix == "ipconfig"):
			if err := vmPerm(true, "VM.Config.Cloudinit", "VM.Config.Network"); err != nil {
				return err
			}
		case opt == "vmstate":
			if err := vmPerm(false, "VM.Config.Disk", "VM.PowerMgmt"); err != nil {
				return err
			}
		default:
			return fail("only root can set '%s' config\n", opt)
		}
	}
	return nil
}

// checkSerialPerm is $check_vm_create_serial_perm: only sockets for tokens.
func checkSerialPerm(user string, params map[string]string) error {
	if user == "root@pam" {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if p, _, ok := keyIndex(k); ok && p == "serial" && params[k] != "socket" {
			return fmt.Errorf("only root can set '%s' config for real devices\n", k)
		}
	}
	return nil
}

// checkSerialSocketLocked: a socket serial port needs VM.Config.HWType.
func (s *Server) checkSerialSocketLocked(user string, vmid int, pool string, params map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if p, _, ok := keyIndex(k); ok && p == "serial" && user != "root@pam" {
			if err := s.checkVMLocked(user, vmid, pool, false, "VM.Config.HWType"); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkStorageAccessLocked is $check_storage_access for the drives in
// params of VM vmid: a new disk needs Datastore.AllocateSpace on its
// storage, an existing volume read access (check_volume_access), an
// import source VM.Clone on its owner or read access, a physical CD drive
// Sys.Console on /.
func (s *Server) checkStorageAccessLocked(user string, vmid int, params map[string]string, defStorage string) error {
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if !isDriveKey(k) {
			continue
		}
		d, err := s.parseDrive(k, params[k])
		if err != nil {
			continue // the drive checks report it
		}
		file := d["file"]
		switch {
		case file == "" || file == "none" || strings.HasSuffix(file, ":cloudinit") || file == "cloudinit":
		case d["media"] == "cdrom" && file == "cdrom":
			if err := s.checkLocked(user, "/", "Sys.Console"); err != nil {
				return err
			}
		case d["media"] != "cdrom" && newDiskRE.MatchString(file):
			sid := newDiskRE.FindStringSubmatch(file)[2]
			if sid == "" {
				sid = defStorage
			}
			if err := s.checkLocked(user, "/storage/"+sid, "Datastore.AllocateSpace"); err != nil {
				return err
			}
		default:
			if err := s.checkVolumeAccessLocked(user, vmid, file); err != nil {
				return err
			}
		}
		if src := d["import-from"]; src != "" {
			if sid, name, ok := strings.Cut(src, ":"); ok {
				if owner := volnameOwner(name); owner != 0 {
					if err := s.checkLocked(user, fmt.Sprintf("/vms/%d", owner), "VM.Clone"); err != nil {
						return err
					}
					continue
				}
				if err := s.checkVolumeAccessLocked(user, vmid, sid+":"+name); err != nil {
					return err
				}
			}
		}
	}
	if st := params["vmstatestorage"]; st != "" {
		return s.checkLocked(user, "/storage/"+st, "Datastore.AllocateSpace")
	}
	return nil
}

// checkCloneStorageAccessLocked is $check_storage_access_clone: every disk
// of the source needs Datastore.AllocateSpace on the storage the copy goes
// to (its own, or target), a physical CD drive Sys.Console on /.
func (s *Server) checkCloneStorageAccessLocked(user string, conf map[string]string, target string) error {
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		if !isDriveKey(k) {
			continue
		}
		d, err := s.parseDrive(k, conf[k])
		if err != nil || d["file"] == "" || d["file"] == "none" {
			continue
		}
		if d["media"] == "cdrom" {
			if d["file"] == "cdrom" {
				if err := s.checkLocked(user, "/", "Sys.Console"); err != nil {
					return err
				}
			}
			continue
		}
		sid, _, _ := strings.Cut(d["file"], ":")
		if target != "" {
			sid = target
		}
		if err := s.checkLocked(user, "/storage/"+sid, "Datastore.AllocateSpace"); err != nil {
			return err
		}
	}
	if st := conf["vmstatestorage"]; st != "" {
		return s.checkLocked(user, "/storage/"+st, "Datastore.AllocateSpace")
	}
	return nil
}

// checkVolumeAccessLocked is PVE::Storage::check_volume_access (pve-storage
// src/PVE/Storage.pm): Datastore.Allocate on the storage allows all; ISOs,
// templates and import images need Datastore.AllocateSpace or
// Datastore.Audit; a VM's own disk is fine; another VM's disk needs
// Datastore.Audit and VM.Config.Disk on that VM.
func (s *Server) checkVolumeAccessLocked(user string, vmid int, volid string) error {
	sid, name, ok := strings.Cut(volid, ":")
	if !ok {
		if user != "root@pam" {
			return fail("Only root can pass arbitrary filesystem paths.")
		}
		return nil
	}
	if user == "root@pam" || s.hasLocked(user, "/storage/"+sid, "Datastore.Allocate") {
		return nil
	}
	owner := volnameOwner(name)
	switch content := contentOfVolname(name); {
	case content == "iso" || content == "vztmpl" || content == "import":
		return s.checkAnyLocked(user, "/storage/"+sid, "Datastore.AllocateSpace", "Datastore.Audit")
	case owner != 0 && owner == vmid:
		return nil
	case content == "images" && owner != 0:
		if err := s.checkLocked(user, "/storage/"+sid, "Datastore.Audit"); err != nil {
			return err
		}
		return s.checkLocked(user, fmt.Sprintf("/vms/%d", owner), "VM.Config.Disk")
	}
	return fail("missing privileges to access %s\n", volid)
}

// volnameOwner is the VM a disk volume name belongs to ("vm-104-disk-0",
// "base-9000-disk-0/vm-104-disk-0", "104/vm-104-disk-0.qcow2"), or 0.
func volnameOwner(name string) int {
	base := name[strings.LastIndex(name, "/")+1:]
	for _, prefix := range []string{"vm-", "base-"} {
		if rest, ok := strings.CutPrefix(base, prefix); ok {
			id, _, _ := strings.Cut(rest, "-")
			n, _ := strconv.Atoi(id)
			return n
		}
	}
	return 0
}

// checkBridgeAccessLocked is QemuServer.pm check_bridge_access with
// pve-guest-common GuestHelpers.pm check_vnet_access: SDN.Use on the
// bridge in the zone "localnetwork" (a plain Linux bridge), on
// /sdn/zones/localnetwork/<bridge>/<tag> for a VLAN tag.
func (s *Server) checkBridgeAccessLocked(user string, conf map[string]string) error {
	if user == "root@pam" {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		if p, _, ok := keyIndex(k); !ok || p != "net" {
			continue
		}
		n, err := s.confM.ParseProperty(k, conf[k])
		if err != nil || n["bridge"] == "" {
			continue
		}
		path := "/sdn/zones/localnetwork/" + n["bridge"]
		if n["tag"] != "" {
			path += "/" + n["tag"]
		}
		if err := s.checkLocked(user, path, "SDN.Use"); err != nil {
			return err
		}
	}
	return nil
}

// rootOnlyParams is the "Only root may use this option." check the power
// endpoints make for skiplock, keepActive and the migration parameters.
func rootOnlyParams(r *request, names ...string) error {
	if r.user == "root@pam" {
		return nil
	}
	for _, n := range names {
		if v, ok := r.p[n]; ok && v != "" && v != "0" {
			return param1(n, "Only root may use this option.")
		}
	}
	return nil
}
