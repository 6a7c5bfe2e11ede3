package talos

import (
	"fmt"
	"net/netip"
	"strings"
)

// bootKind says what the firmware found to boot.
type bootKind int

const (
	bootNothing   bootKind = iota
	bootISO                // a Talos ISO: live system, maintenance mode until a config arrives
	bootDiskImage          // a disk imported from a Talos disk image, never configured
	bootInstalled          // a disk Talos installed itself onto (state token on it)
)

// bootChoice is the outcome of the firmware's walk through the boot order.
type bootChoice struct {
	kind  bootKind
	disk  string // disk interface name for disk boots
	image Image
	token string // installed-state token for bootInstalled
	why   string // for bootNothing: what the firmware saw, for the log
}

// wipedContent marks a disk that Talos reset wiped: no partition table, so
// not bootable, even if it was imported from a disk image.
const wipedContent = "wiped (Talos reset)"

// chooseBoot walks the boot order like SeaBIOS/OVMF: a blank disk is skipped,
// a disk holding an OS boots, the CD-ROM boots when it holds a Talos ISO,
// network boot finds no PXE server in the lab.
func chooseBoot(m Machine) bootChoice {
	order := m.BootOrder
	if len(order) == 0 {
		for _, d := range m.Disks {
			order = append(order, d.Name)
		}

		order = append(order, "cdrom")
	}

	var seen []string

	for _, dev := range order {
		if strings.HasPrefix(dev, "net") {
			seen = append(seen, dev+": no PXE server in the lab")

			continue
		}

		if disk, ok := findDisk(m.Disks, dev); ok {
			choice, note := diskBoot(disk)
			if choice.kind != bootNothing {
				return choice
			}

			seen = append(seen, dev+": "+note)

			continue
		}

		// Anything else in the boot order is a CD-ROM drive.
		if m.CDROMDrive != "" && dev != m.CDROMDrive {
			seen = append(seen, dev+": no bootable medium")

			continue
		}

		if m.CDROM == "" {
			seen = append(seen, dev+": no medium")

			continue
		}

		img, err := ParseBootURL(m.CDROM)
		if err != nil || !IsISO(m.CDROM) {
			seen = append(seen, fmt.Sprintf("%s: ISO from %s is not a Talos ISO", dev, m.CDROM))

			continue
		}

		return bootChoice{kind: bootISO, image: img}
	}

	return bootChoice{kind: bootNothing, why: "no bootable device (" + strings.Join(seen, "; ") + ")"}
}

func findDisk(disks []Disk, name string) (Disk, bool) {
	for _, d := range disks {
		if d.Name == name {
			return d, true
		}
	}

	return Disk{}, false
}

// diskBoot says whether a disk boots Talos, and if not, why.
func diskBoot(d Disk) (bootChoice, string) {
	switch {
	case d.Content == wipedContent:
		return bootChoice{}, "blank disk (wiped)"
	case d.Content != "":
		token, img, err := parseDiskContent(d.Content)
		if err != nil {
			return bootChoice{}, err.Error()
		}

		return bootChoice{kind: bootInstalled, disk: d.Name, image: img, token: token}, ""
	case d.SourceURL != "":
		img, err := ParseBootURL(d.SourceURL)
		if err != nil || IsISO(d.SourceURL) {
			return bootChoice{}, fmt.Sprintf("imported from %s, which is not a Talos disk image", d.SourceURL)
		}

		return bootChoice{kind: bootDiskImage, disk: d.Name, image: img}, ""
	default:
		return bootChoice{}, "blank disk"
	}
}

// Disk content written by an installed node: a readable summary plus the
// token of the node state (config, etcd data) kept by the simulator.
const contentPrefix = "talos-installed "

func formatDiskContent(token string, img Image) string {
	return fmt.Sprintf("%sversion=%s platform=%s schematic=%s installer=%s state=%s",
		contentPrefix, img.Version, img.Platform, img.Schematic, img.Source, token)
}

func parseDiskContent(content string) (token string, img Image, err error) {
	rest, ok := strings.CutPrefix(content, contentPrefix)
	if !ok {
		return "", Image{}, fmt.Errorf("disk holds an OS the lab does not simulate (%q)", content)
	}

	for field := range strings.FieldsSeq(rest) {
		k, v, _ := strings.Cut(field, "=")

		switch k {
		case "version":
			img.Version = v
		case "platform":
			img.Platform = v
		case "schematic":
			img.Schematic = v
		case "installer":
			img.Source = v
		case "state":
			token = v
		}
	}

	if token == "" || img.Version == "" {
		return "", Image{}, fmt.Errorf("disk content %q is not a Talos installation the lab wrote", content)
	}

	return token, img, nil
}

// nodeAddress decides the address a booted node ends up with. Talos on the
// nocloud platform applies the cloud-init network config (ipconfig0 for the
// first NIC); on metal it ignores cloud-init and runs DHCP. The lab has no
// DHCP server and serves only loopback addresses, so anything else leaves the
// node unreachable; the reason goes to the log.
func nodeAddress(m Machine, platform string) (netip.Addr, string) {
	if len(m.NICs) == 0 {
		return netip.Addr{}, "the VM has no network card"
	}

	if platform != PlatformNocloud {
		return netip.Addr{}, fmt.Sprintf("platform %q ignores the cloud-init drive and asks DHCP for an address; the lab has no DHCP server (use a nocloud image)", platform)
	}

	if m.CloudInit == nil || len(m.CloudInit.Interfaces) == 0 {
		return netip.Addr{}, "no cloud-init network config: Talos falls back to DHCP; the lab has no DHCP server"
	}

	ipc := m.CloudInit.Interfaces[0]
	if ipc.DHCP || !ipc.Address.IsValid() {
		return netip.Addr{}, "ipconfig0 asks for DHCP; the lab has no DHCP server (give a static ip=)"
	}

	addr := ipc.Address.Addr()
	if !addr.Is4() || !netip.MustParsePrefix("127.0.0.0/8").Contains(addr) {
		return netip.Addr{}, fmt.Sprintf("address %s from ipconfig0 is outside 127.0.0.0/8; the lab serves only loopback addresses", addr)
	}

	return addr, ""
}
