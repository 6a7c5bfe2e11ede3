package pveapi

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

// Formats the schema names but the lab does not check. A parameter using one
// of them is refused (never silently accepted): see CheckFormat.
var errNotImplemented = errors.New("not implemented by the lab")

// codeFormats are the registered validator functions of pve-common
// (src/PVE/JSONSchema.pm), pve-storage (src/PVE/Storage/Plugin.pm),
// pve-access-control (src/PVE/AccessControl.pm) and qemu-server
// (src/PVE/QemuServer.pm), with their die messages.
var codeFormats = map[string]func(string) error{
	"string": func(string) error { return nil },
	"urlencoded": func(v string) error {
		if !regexp.MustCompile(`^[-%a-zA-Z0-9_.!~*'()]*$`).MatchString(v) {
			return fmt.Errorf("invalid urlencoded string: %s\n", v)
		}
		return nil
	},
	"pve-configid": func(v string) error {
		if !configIDRE.MatchString(v) {
			return fmt.Errorf("invalid configuration ID '%s'\n", v)
		}
		return nil
	},
	"pve-storage-id": func(v string) error { return parseID(v, "storage") },
	"pve-bridge-id": func(v string) error {
		if !regexp.MustCompile(`^[-_.\w\d]+$`).MatchString(v) {
			return fmt.Errorf("invalid bridge ID '%s'\n", v)
		}
		return nil
	},
	"pve-vmid": func(v string) error {
		if !regexp.MustCompile(`^[1-9][0-9]{2,8}$`).MatchString(v) {
			return errors.New("value does not look like a valid VM ID\n")
		}
		return nil
	},
	"pve-node": func(v string) error {
		if !nodeNameRE.MatchString(v) {
			return errors.New("value does not look like a valid node name\n")
		}
		return nil
	},
	"mac-addr": func(v string) error {
		// The I/G bit must not be set (pve_verify_mac_addr).
		if !regexp.MustCompile(`^(?i:[a-f0-9][02468ace](?::[a-f0-9]{2}){5})$`).MatchString(v) {
			return errors.New("value does not look like a valid unicast MAC address\n")
		}
		return nil
	},
	"ipv4": func(v string) error {
		if !isIPv4(v) {
			return errors.New("value does not look like a valid IPv4 address\n")
		}
		return nil
	},
	"ipv6": func(v string) error {
		if !isIPv6(v) {
			return errors.New("value does not look like a valid IPv6 address\n")
		}
		return nil
	},
	"ip": func(v string) error {
		if !isIPv4(v) && !isIPv6(v) {
			return errors.New("value does not look like a valid IP address\n")
		}
		return nil
	},
	"CIDR": func(v string) error {
		if !isCIDR(v, 4) && !isCIDR(v, 6) {
			return errors.New("value does not look like a valid CIDR network\n")
		}
		return nil
	},
	"pve-ipv4-config": func(v string) error {
		if v != "dhcp" && v != "manual" && !isCIDR(v, 4) {
			return errors.New("value does not look like a valid ipv4 network configuration\n")
		}
		return nil
	},
	"pve-ipv6-config": func(v string) error {
		if v != "auto" && v != "dhcp" && v != "manual" && !isCIDR(v, 6) {
			return errors.New("value does not look like a valid ipv6 network configuration\n")
		}
		return nil
	},
	"dns-name": func(v string) error {
		if !dnsNameRE.MatchString(v) {
			return errors.New("value does not look like a valid DNS name\n")
		}
		return nil
	},
	"address": func(v string) error {
		if !isIPv4(v) && !isIPv6(v) && !dnsNameRE.MatchString(v) {
			return fmt.Errorf("value does not look like a valid address: %s\n", v)
		}
		return nil
	},
	"pve-iface": func(v string) error {
		if !regexp.MustCompile(`^(?i:[a-z][a-z0-9_]{1,20}([:\.]\d+)?)$`).MatchString(v) {
			return fmt.Errorf("invalid network interface name '%s'\n", v)
		}
		return nil
	},
	"disk-size": func(v string) error {
		if _, ok := ParseSize(v); !ok {
			return fmt.Errorf("value does not look like a valid disk size: %s\n", v)
		}
		return nil
	},
	"pve-tag": func(v string) error {
		if !regexp.MustCompile(`^(?i:[a-z0-9_][a-z0-9_\-\+\.]*)$`).MatchString(v) {
			return errors.New("invalid characters in tag\n")
		}
		return nil
	},
	"pve-poolid": func(v string) error {
		if len(strings.Split(v, "/")) > 3 {
			return fmt.Errorf("pool name '%s' nested too deeply (max levels = 3)\n", v)
		}
		if !regexp.MustCompile(`^[A-Za-z0-9\.\-_]+(?:/[A-Za-z0-9\.\-_]+){0,2}$`).MatchString(v) {
			return fmt.Errorf("pool name '%s' contains invalid characters\n", v)
		}
		return nil
	},
	// pve-storage src/PVE/Storage/Plugin.pm verify_content: the content
	// types of a 'dir' storage, plus 'import'.
	"pve-storage-content": func(v string) error {
		switch v {
		case "images", "rootdir", "vztmpl", "iso", "backup", "snippets", "import":
			return nil
		}
		return fmt.Errorf("invalid content type '%s'\n", v)
	},
	"pve-volume-id": checkVolumeID,
	"pve-volume-id-or-absolute-path": func(v string) error {
		if strings.HasPrefix(v, "/") {
			return nil
		}
		return checkVolumeID(v)
	},
	// qemu-server verify_volume_id_or_qm_path
	"pve-volume-id-or-qm-path": func(v string) error {
		if v == "none" || v == "cdrom" || strings.HasPrefix(v, "/") {
			return nil
		}
		return checkVolumeID(v)
	},
	"pve-task-status-type": func(v string) error {
		if !regexp.MustCompile(`^(?i:ok|error|warning|unknown)$`).MatchString(v) {
			return fmt.Errorf("invalid status '%s'\n", v)
		}
		return nil
	},
	// qemu-server parse_hotplug_features
	"pve-hotplug-features": func(v string) error {
		if v == "0" || v == "1" {
			return nil
		}
		for _, f := range splitList(v) {
			if !regexp.MustCompile(`^(network|disk|cpu|memory|usb|cloudinit)$`).MatchString(f) {
				return fmt.Errorf("invalid hotplug feature '%s'\n", f)
			}
		}
		return nil
	},
	// qemu-server verify_bootdev: a drive, netN, usbN or hostpciN, but not
	// efidisk/tpmstate.
	"pve-qm-bootdev": func(v string) error {
		if bootDevRE.MatchString(v) {
			return nil
		}
		return fmt.Errorf("invalid boot device '%s'\n", v)
	},
	"pve-qm-bootdisk": func(v string) error {
		if driveNameRE.MatchString(v) {
			return nil
		}
		return fmt.Errorf("invalid boot disk '%s'\n", v)
	},
	// pve-common pve_verify_startup_order / pve_parse_startup_order.
	"pve-startup-order": func(v string) error {
		for _, p := range splitList(v) {
			if !regexp.MustCompile(`^(order=\d+|up=\d+|down=\d+)$`).MatchString(p) {
				return errors.New("unable to parse startup options\n")
			}
		}
		return nil
	},
	// qemu-server CPUConfig.pm parse_phys_bits
	"pve-phys-bits": func(v string) error {
		if v == "host" {
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || len(v) > 2 || n < 8 || n > 64 {
			return errors.New("value must be an integer between 8 and 64 or 'host'\n")
		}
		return nil
	},
}

var (
	configIDRE  = regexp.MustCompile(`^(?i:[a-z][a-z0-9_-]+)$`)
	nodeNameRE  = regexp.MustCompile(`^([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?)$`)
	dnsNameRE   = regexp.MustCompile(`^(([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?)\.)*([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?)$`)
	volumeIDRE  = regexp.MustCompile(`^(?i:([a-z][a-z0-9\-\_\.]*[a-z0-9]):(.+))$`)
	driveNameRE = regexp.MustCompile(`^(ide[0-3]|sata[0-5]|scsi([0-9]|[12][0-9]|30)|virtio([0-9]|1[0-5])|efidisk0|tpmstate0)$`)
	bootDevRE   = regexp.MustCompile(`^(ide[0-3]|sata[0-5]|scsi([0-9]|[12][0-9]|30)|virtio([0-9]|1[0-5])|net([0-9]|[12][0-9]|3[01])|usb([0-9]|1[0-3])|hostpci([0-9]|1[0-5]))$`)
)

// checkVolumeID is pve-storage's parse_volume_id.
func checkVolumeID(v string) error {
	if !volumeIDRE.MatchString(v) {
		return fmt.Errorf("unable to parse volume ID '%s'\n", v)
	}
	return nil
}

// parseID is pve-common's parse_id.
func parseID(id, what string) error {
	if len(id) < 2 {
		return fmt.Errorf("%s ID '%s' cannot be shorter than 2 characters\n", what, id)
	}
	if !regexp.MustCompile(`^(?i:[a-z][a-z0-9\-\_\.]*[a-z0-9])$`).MatchString(id) {
		return fmt.Errorf("%s ID '%s' contains illegal characters\n", what, id)
	}
	return nil
}

func isIPv4(v string) bool {
	a, err := netip.ParseAddr(v)
	return err == nil && a.Is4() && !strings.Contains(v, ":")
}

func isIPv6(v string) bool {
	a, err := netip.ParseAddr(v)
	return err == nil && strings.Contains(v, ":") && a.Zone() == ""
}

// isCIDR is pve_verify_cidrv4/v6: an address and a prefix length above 7.
func isCIDR(v string, family int) bool {
	addr, bits, ok := strings.Cut(v, "/")
	if !ok {
		return false
	}
	n, err := strconv.Atoi(bits)
	if err != nil || n <= 7 {
		return false
	}
	if family == 4 {
		return isIPv4(addr) && n <= 32
	}
	return isIPv6(addr) && n <= 128
}

// splitList is PVE::Tools::split_list: commas, semicolons and whitespace
// separate the items (or NUL bytes, when present).
func splitList(v string) []string {
	if strings.Contains(v, "\x00") {
		return strings.Split(v, "\x00")
	}
	return strings.FieldsFunc(v, func(r rune) bool {
		return r == ',' || r == ';' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
	})
}

// CheckFormat validates v against a named format the way check_format does,
// including the "-list" and "-opt" variants. path names the parameter (for
// property-string formats). Errors end with "\n" like Perl die messages.
func CheckFormat(format, v, path string) error {
	name, kind := format, ""
	if n, ok := strings.CutSuffix(format, "-list"); ok {
		name, kind = n, "list"
	} else if n, ok := strings.CutSuffix(format, "-opt"); ok {
		name, kind = n, "opt"
	}
	if props, ok := namedFormats[name]; ok && kind == "" {
		_, err := parsePropertyString(props, v, path, name)
		return err
	}
	check, ok := codeFormats[name]
	if !ok {
		return fmt.Errorf("format '%s' is %s: the lab refuses the parameter rather than accept it unchecked\n", format, errNotImplemented)
	}
	switch kind {
	case "list":
		for _, item := range splitList(v) {
			if err := check(item); err != nil {
				return err
			}
		}
		return nil
	case "opt":
		if v == "" {
			return nil
		}
	}
	return check(v)
}

// ParseSize is pve-common's parse_size: a number with an optional K/M/G/T
// (or KiB...) suffix, in bytes.
func ParseSize(v string) (int64, bool) {
	m := regexp.MustCompile(`^(\d+(\.\d+)?)([KMGT](?:iB)?)?$`).FindStringSubmatch(v)
	if m == nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, false
	}
	switch strings.TrimSuffix(m[3], "iB") {
	case "K":
		f *= 1 << 10
	case "M":
		f *= 1 << 20
	case "G":
		f *= 1 << 30
	case "T":
		f *= 1 << 40
	}
	return int64(math.Floor(f)), true
}

// FormatSize is pve-common's format_size: the largest unit that divides the
// size exactly ("32G", "512M", "1536K", or plain bytes).
func FormatSize(size int64) string {
	units := []string{"K", "M", "G", "T"}
	s := size
	suffix := ""
	for _, u := range units {
		if s%1024 != 0 {
			break
		}
		s /= 1024
		suffix = u
	}
	return strconv.FormatInt(s, 10) + suffix
}
