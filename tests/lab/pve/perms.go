package pve

import (
	"fmt"
	"strings"
)

// The lab's API token is "root@pam!lab": a token, so never the user
// 'root@pam' that qemu-server lets set anything. Options outside the
// privilege groups of qemu-server src/PVE/API2/Qemu.pm
// ($check_vm_modify_config_perm: $cpuoptions, $memoryoptions,
// $hwtypeoptions, $generaloptions, $vmpoweroptions, $diskoptions,
// $cloudinitoptions) are root-only ("only root can set 'args' config").
var privilegedOptions = map[string]bool{}

func init() {
	for _, group := range []string{
		"cores cpu runningcpu cpulimit cpuunits numa smp sockets vcpus",
		"memory balloon shares allow-ksm",
		"acpi hotplug kvm machine runningmachine scsihw smbios1 tablet vga watchdog audio0 rng0",
		"agent autostart bios description keyboard localtime migrate_downtime migrate_speed name onboot ostype protection reboot startdate startup tdf template",
		"freeze",
		"boot bootdisk vmstatestorage",
		"cicustom cipassword citype ciuser ciupgrade nameserver searchdomain sshkeys",
	} {
		for _, k := range strings.Fields(group) {
			privilegedOptions[k] = true
		}
	}
}

// checkModifyPerm refuses root-only options for a token user.
func checkModifyPerm(user string, keys []string) error {
	if user == "root@pam" {
		return nil
	}
	for _, opt := range keys {
		prefix, _, indexed := keyIndex(opt)
		switch {
		case isDriveKey(opt), opt == "cdrom", opt == "tags", privilegedOptions[opt]:
		case indexed && (prefix == "unused" || prefix == "serial" || prefix == "usb" || prefix == "hostpci" ||
			prefix == "virtiofs" || prefix == "net" || prefix == "ipconfig" || prefix == "numa"):
		case opt == "running-nets-host-mtu" || opt == "vmstate":
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
	for _, k := range sortedKeys(params) {
		if p, _, ok := keyIndex(k); ok && p == "serial" && params[k] != "socket" {
			return fmt.Errorf("only root can set '%s' config for real devices\n", k)
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
