package proxmox

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
)

// Formats from pve-common src/PVE/JSONSchema.pm: dns-name, pve-tag,
// mac-addr (unicast only), pve-bridge-id, pve-storage-id (CONFIGID_RE).
var (
	dnsNameRE   = regexp.MustCompile(`^(([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?)\.)*([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?)$`)
	tagRE       = regexp.MustCompile(`(?i)^[a-z0-9_][a-z0-9_\-+.]*$`)
	macRE       = regexp.MustCompile(`(?i)^[a-f0-9][02468ace](:[a-f0-9]{2}){5}$`)
	bridgeRE    = regexp.MustCompile(`^[-_.\w]+$`)
	storageIDRE = regexp.MustCompile(`(?i)^[a-z][a-z0-9_-]+$`)
	// an ISO volume: <storage>:iso/<file>.iso|.img (pve-storage ISO_EXT_RE_0)
	isoVolumeRE = regexp.MustCompile(`(?i)^[a-z][a-z0-9_-]+:iso/[^/]+\.(iso|img)$`)
	uuidRE      = regexp.MustCompile(`(?i)^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	// a volume to import a disk from (qemu-server API2/Qemu.pm
	// check_storage_access: content 'images' or 'import'): a disk image in
	// the import directory (pve-storage IMPORT_EXT_RE_1, a disk inside an
	// OVA included), or a VM disk
	importVolumeRE = regexp.MustCompile(`(?i)^[a-z][a-z0-9_-]+:(import/[^/]+\.(raw|qcow2|vmdk)|import/[^/]+\.ova/[^/]+|` +
		`([0-9]+/)?(vm|base)-[0-9]+-[^/]+)$`)
)

// validator collects check failures for known inputs.
type validator struct {
	u        unknowns
	failures []p.CheckFailure
	// warnings are shown at preview without failing it
	warnings []string
}

func (v *validator) fail(path, format string, args ...any) {
	v.failures = append(v.failures, p.CheckFailure{Property: path, Reason: fmt.Sprintf(format, args...)})
}

// check reports a failure at path when the value is known and bad.
func (v *validator) check(path string, bad bool, format string, args ...any) {
	if bad && v.u.known(path) {
		v.fail(path, format, args...)
	}
}

// validateVM checks the inputs without contacting Proxmox. old holds the
// previous inputs on an update (nil on create), to refuse disk shrinking.
func validateVM(a VirtualMachineArgs, old *VirtualMachineArgs, u unknowns) []p.CheckFailure {
	v := &validator{u: u}
	v.check("node", strings.TrimSpace(a.Node) == "", "node is required: the name of the Proxmox VE node to run the VM on")
	if a.VMID != nil {
		v.check("vmId", *a.VMID < 100 || *a.VMID > 999999999, "vmId %d is out of range: Proxmox VMIDs are 100 to 999999999", *a.VMID)
	}
	if a.Name != nil {
		v.check("name", !dnsNameRE.MatchString(*a.Name), "name %q is not a valid DNS name (letters, digits, '-' and '.'; "+
			"no '_' or spaces): Proxmox refuses it", *a.Name)
	}
	for i, t := range a.Tags {
		v.check(fmt.Sprintf("tags[%d]", i), !tagRE.MatchString(t), "tag %q may only contain letters, digits and _ - + . "+
			"and must not start with - + or .", t)
	}
	if c := a.Clone; c != nil {
		v.check("clone.vmId", c.VMID < 100, "clone.vmId %d is not a VMID (100 or more)", c.VMID)
		if c.Storage != nil && c.Full != nil && !*c.Full {
			v.check("clone.storage", true, "clone.storage applies to full clones only: Proxmox refuses a target storage "+
				"for linked clones; remove it or set clone.full: true")
		}
	}
	if a.ISO != nil && *a.ISO != "" {
		v.check("iso", !isoVolumeRE.MatchString(*a.ISO), "iso %q is not an ISO volume: use <storage>:iso/<file>.iso "+
			"(for example local:iso/talos-nocloud-amd64.iso, or the volumeId of a DownloadFile)", *a.ISO)
	}
	if c := a.CPU; c != nil {
		if c.Cores != nil {
			v.check("cpu.cores", *c.Cores < 1, "cpu.cores must be at least 1, got %d", *c.Cores)
		}
		if c.Sockets != nil {
			v.check("cpu.sockets", *c.Sockets < 1, "cpu.sockets must be at least 1, got %d", *c.Sockets)
		}
	}
	if m := a.Memory; m != nil {
		// the API schema's minimum for memory is 16 MiB
		v.check("memory.dedicated", m.Dedicated < 16, "memory.dedicated is %d MiB: a VM needs at least 16 MiB "+
			"(Talos needs 2048 or more)", m.Dedicated)
		if m.Floating != nil {
			v.check("memory.floating", *m.Floating < 0 || *m.Floating > m.Dedicated,
				"memory.floating (%d MiB) must be between 0 and memory.dedicated (%d MiB)", *m.Floating, m.Dedicated)
		}
	}
	if a.EfiDisk != nil {
		v.check("efiDisk", a.Bios == nil || *a.Bios != "ovmf", "efiDisk needs bios: ovmf (SeaBIOS has no EFI variables)")
		v.check("efiDisk.storage", !storageIDRE.MatchString(a.EfiDisk.Storage), "efiDisk.storage %q is not a storage ID", a.EfiDisk.Storage)
	}
	validateDisks(v, a, old)
	validateNICs(v, a)
	validateCloudInit(v, a)
	if g := a.Agent; g != nil && g.Timeout != nil {
		v.check("agent.timeout", *g.Timeout < 1, "agent.timeout must be at least 1 second, got %d", *g.Timeout)
	}
	if a.SmbiosUUID != nil {
		v.check("smbiosUuid", !uuidRE.MatchString(*a.SmbiosUUID), "smbiosUuid %q is not a UUID "+
			"(xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)", *a.SmbiosUUID)
	}
	if a.Template != nil && *a.Template && a.Started != nil && *a.Started {
		v.check("started", true, "a template never runs: remove started or set it to false (template is true)")
	}
	if a.ShutdownTimeout != nil {
		v.check("shutdownTimeout", *a.ShutdownTimeout < 0, "shutdownTimeout must not be negative, got %d", *a.ShutdownTimeout)
	}
	return v.failures
}

func validateDisks(v *validator, a VirtualMachineArgs, old *VirtualMachineArgs) {
	reserved := map[string]string{}
	if a.ISO != nil && *a.ISO != "" {
		reserved[isoInterface] = "the ISO's CD drive"
	}
	if ci := a.CloudInit; ci != nil {
		slot := cloudInitInterface
		if ci.Interface != nil {
			slot = *ci.Interface
		}
		reserved[slot] = "the cloud-init drive"
	}
	oldSize, oldStorage := map[string]int{}, map[string]string{}
	if old != nil {
		for _, d := range old.Disks {
			oldSize[d.Interface], oldStorage[d.Interface] = d.Size, d.Storage
		}
	}
	// qemu-server API2/Qemu.pm move_vm_disk: "Can't move disks from or to
	// template VMs" (unless the template is replaced by a VM)
	wasTemplate := old != nil && isTemplate(*old) && (a.Template == nil || *a.Template)
	seen := map[string]bool{}
	for i, d := range a.Disks {
		at := func(f string) string { return fmt.Sprintf("disks[%d].%s", i, f) }
		if !diskInterfaceRE.MatchString(d.Interface) {
			v.check(at("interface"), true, "disk interface %q is not valid: use scsi0-scsi30, virtio0-virtio15, "+
				"sata0-sata5 or ide0-ide3", d.Interface)
		} else if what, ok := reserved[d.Interface]; ok {
			v.check(at("interface"), true, "disk interface %s is used by %s; choose another slot", d.Interface, what)
		}
		v.check(at("interface"), seen[d.Interface], "disk interface %s is listed twice", d.Interface)
		seen[d.Interface] = true
		v.check(at("storage"), !storageIDRE.MatchString(d.Storage), "disk storage %q is not a storage ID "+
			"(for example local-lvm)", d.Storage)
		v.check(at("size"), d.Size < 1, "disk size must be at least 1 GiB, got %d", d.Size)
		if was, ok := oldSize[d.Interface]; ok && d.Size < was {
			v.check(at("size"), true, "disk %s is %d GiB and cannot shrink to %d GiB: Proxmox cannot shrink disks "+
				"and a replacement would lose the data. Keep %d GiB or more", d.Interface, was, d.Size, was)
		}
		if was, ok := oldStorage[d.Interface]; ok && wasTemplate && was != d.Storage {
			v.check(at("storage"), true, "disk %s of a template cannot move from %s to %s (Proxmox cannot move a "+
				"template's disks): keep storage %s, or replace the template", d.Interface, was, d.Storage, was)
		}
		if d.SSD != nil && *d.SSD && strings.HasPrefix(d.Interface, "virtio") {
			v.check(at("ssd"), true, "ssd is not available on virtio disks (Proxmox refuses it); use a scsi disk")
		}
		if d.IOThread != nil && *d.IOThread && (strings.HasPrefix(d.Interface, "ide") || strings.HasPrefix(d.Interface, "sata")) {
			v.check(at("iothread"), true, "iothread is only available on virtio and scsi disks")
		}
		if d.ImportFrom != nil {
			validateImportFrom(v, at("importFrom"), *d.ImportFrom)
		}
	}
}

func validateNICs(v *validator, a VirtualMachineArgs) {
	for i, n := range a.NetworkDevices {
		at := func(f string) string { return fmt.Sprintf("networkDevices[%d].%s", i, f) }
		v.check(at("bridge"), n.Bridge == "" || !bridgeRE.MatchString(n.Bridge), "bridge %q is not a bridge name "+
			"(for example vmbr0)", n.Bridge)
		if n.VLANID != nil {
			v.check(at("vlanId"), *n.VLANID < 0 || *n.VLANID > 4094, "vlanId must be 1 to 4094 (or 0 for untagged), got %d", *n.VLANID)
		}
		if n.MTU != nil {
			// qemu-server: 1 means the bridge's MTU; otherwise at least 576
			v.check(at("mtu"), *n.MTU != 1 && (*n.MTU < 576 || *n.MTU > 65520), "mtu must be 1 (the bridge's MTU) or "+
				"576 to 65520, got %d", *n.MTU)
		}
		if n.MACAddress != nil {
			v.check(at("macAddress"), !macRE.MatchString(*n.MACAddress), "macAddress %q is not a unicast MAC address "+
				"XX:XX:XX:XX:XX:XX (the second hex digit must be even)", *n.MACAddress)
		}
	}
}

func validateCloudInit(v *validator, a VirtualMachineArgs) {
	ci := a.CloudInit
	if ci == nil {
		return
	}
	v.check("cloudInit.storage", !storageIDRE.MatchString(ci.Storage), "cloudInit.storage %q is not a storage ID "+
		"(for example local-lvm)", ci.Storage)
	if ci.Interface != nil {
		v.check("cloudInit.interface", !diskInterfaceRE.MatchString(*ci.Interface) ||
			(a.ISO != nil && *a.ISO != "" && *ci.Interface == isoInterface), "cloudInit.interface %q must be a free drive slot such as "+
			"ide0, ide1, ide3 or sata0 (ide2 holds the ISO)", *ci.Interface)
	}
	// a clone may take its network devices from the template
	if (a.Clone == nil || a.NetworkDevices != nil) && !v.u.anyUnder("networkDevices") && !v.u.anyUnder("cloudInit.ipConfigs") {
		v.check("cloudInit.ipConfigs", len(ci.IPConfigs) > len(a.NetworkDevices), "cloudInit.ipConfigs has %d entries "+
			"but the VM has %d network devices: each entry configures the network device at the same position",
			len(ci.IPConfigs), len(a.NetworkDevices))
	}
	for i, ip := range ci.IPConfigs {
		at := fmt.Sprintf("cloudInit.ipConfigs[%d]", i)
		validateAddress(v, at+".ipv4", ip.IPv4, false)
		validateAddress(v, at+".ipv6", ip.IPv6, true)
	}
	if d := ci.DNS; d != nil {
		for i, s := range d.Servers {
			_, err := netip.ParseAddr(s)
			v.check(fmt.Sprintf("cloudInit.dns.servers[%d]", i), err != nil, "DNS server %q is not an IP address", s)
		}
	}
}

func validateAddress(v *validator, at string, ip *VirtualMachineIpAddress, six bool) {
	if ip == nil {
		return
	}
	family := "IPv4"
	if six {
		family = "IPv6"
	}
	dynamic := ip.Address == "dhcp" || (six && ip.Address == "auto")
	if !dynamic {
		pfx, err := netip.ParsePrefix(ip.Address)
		bad := err != nil || pfx.Addr().Is6() != six || pfx.Addr().Is4In6()
		hint := "dhcp"
		if six {
			hint = "dhcp, auto"
		}
		v.check(at+".address", bad, "%q is not an %s address with prefix length (like %s) or %s", ip.Address, family,
			map[bool]string{false: "192.168.1.21/24", true: "fd00::21/64"}[six], hint)
	}
	if ip.Gateway != nil {
		gw, err := netip.ParseAddr(*ip.Gateway)
		v.check(at+".gateway", err != nil || gw.Is6() != six, "gateway %q is not an %s address", *ip.Gateway, family)
		v.check(at+".gateway", dynamic, "a gateway needs a static address; with %s the gateway comes from the network", ip.Address)
	}
}

// validateImportFrom refuses what Proxmox refuses for import-from: paths
// (only root@pam may name one, never an API token), and volumes that are
// not disk images ("... has wrong type 'iso' - needs to be 'images' or
// 'import'", qemu-server API2/Qemu.pm check_storage_access).
func validateImportFrom(v *validator, path, vol string) {
	switch {
	case strings.HasPrefix(vol, "/"):
		v.check(path, true, "importFrom %q is a path: Proxmox lets only root@pam import from a path, never an API "+
			"token. Give a volume ID such as local:import/talos-nocloud-amd64.qcow2 (a DownloadFile with content import)", vol)
	case strings.Contains(vol, ":iso/"), strings.Contains(vol, ":vztmpl/"), strings.Contains(vol, ":snippets/"),
		strings.Contains(vol, ":backup/"):
		v.check(path, true, "importFrom %q is not a disk image (Proxmox imports volumes of content import or images "+
			"only): download the .raw or .qcow2 disk image with content import instead of an ISO", vol)
	case strings.HasSuffix(strings.ToLower(vol), ".ova"):
		v.check(path, true, "importFrom %q is a whole OVA archive: import one disk inside it, "+
			"<storage>:import/<file>.ova/<disk>.vmdk", vol)
	default:
		v.check(path, !importVolumeRE.MatchString(vol), "importFrom %q is not a volume to import: use "+
			"<storage>:import/<file>.raw|.qcow2|.vmdk (the volumeId of a DownloadFile with content import) or a VM "+
			"disk such as local-lvm:vm-100-disk-0", vol)
	}
}
