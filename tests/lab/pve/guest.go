package pve

import (
	"context"
	"time"
)

// BootInfo is everything Proxmox gives a VM when it starts: the guest
// operating system (a GuestBooter) learns from it what it boots from and
// how its network is configured.
type BootInfo struct {
	Node       string
	VMID       int
	Name       string
	SMBIOSUUID string
	VMGenID    string
	Disks      []Disk // hard disks and CD-ROMs, in config key order
	// CDROM is the ISO in the first CD-ROM drive that holds one, if any.
	CDROM *Image
	// BootOrder lists devices ("scsi0", "ide2", "net0") in boot order.
	BootOrder []string
	NICs      []NIC
	// CloudInit is the content of the VM's cloud-init drive, nil without one.
	CloudInit    *CloudInit
	AgentEnabled bool
	MemoryMiB    int
	Cores        int
	Sockets      int
	BIOS         string // seabios or ovmf
	Machine      string
}

// Disk is one drive of a VM.
type Disk struct {
	Interface string // scsi0, virtio0, sata0, ide0, efidisk0
	Volume    string // local-lvm:vm-100-disk-0
	SizeBytes int64
	Media     string // "disk" or "cdrom"
	SSD       bool   // ssd=1: the guest sees a non-rotational disk
	// Options are the drive's other settings (cache, discard, iothread...).
	Options map[string]string
	Image   Image // what the disk holds
}

// Image describes the content of a volume: where it came from and what a
// guest wrote to it.
type Image struct {
	Volume    string // the volume the content came from (an ISO, an import image)
	SourceURL string // the URL the file was downloaded from
	// Written is set by a guest that installed something onto the disk
	// (for example "talos:v1.12.0"); it survives stop/start and clones.
	Written string
}

// NIC is one network device.
type NIC struct {
	Name   string // net0
	MAC    string // BC:24:11:xx:xx:xx
	Model  string // virtio
	Bridge string
	Tag    int
	MTU    int
}

// CloudInit is the content of a VM's NoCloud cloud-init drive.
type CloudInit struct {
	Hostname     string
	IPConfigs    map[string]IPConfig // by NIC name (net0)
	Nameservers  []string
	SearchDomain string
	User         string
	SSHKeys      string
	UserData     string // the rendered user-data file
	NetworkData  string // the rendered network-config file
	MetaData     string // the rendered meta-data file
}

// IPConfig is one ipconfigN entry.
type IPConfig struct {
	IP, Gateway, IP6, Gateway6 string // "192.0.2.10/24", "dhcp", "auto", ...
}

// AgentInfo is what the QEMU guest agent reports.
type AgentInfo struct {
	Hostname      string
	OSID          string // "talos"
	OSName        string
	OSVersion     string
	KernelRelease string
	Interfaces    []AgentInterface
}

// AgentInterface is one interface from guest-network-get-interfaces.
type AgentInterface struct {
	Name      string
	MAC       string
	Addresses []string // CIDR notation, IPv4 and IPv6
}

// Guest is a running guest operating system.
type Guest interface {
	// PowerOff ends the guest at once (qemu stopped).
	PowerOff()
	// Shutdown asks the guest to shut down (ACPI or agent) and returns when
	// it has; an error or the context ending means it did not.
	Shutdown(ctx context.Context) error
	// Agent returns the agent's answers, false when no agent runs.
	Agent() (AgentInfo, bool)
}

// GuestBooter starts the guest OS of a VM that Proxmox starts. A nil Guest
// means nothing boots (no bootable medium). ctx ends when qemu stops.
type GuestBooter func(ctx context.Context, vm BootInfo, host Host) Guest

// Host is what a running guest can ask of its hypervisor.
type Host interface {
	// WriteImage records what the guest wrote to one of its disks (by
	// volume id, see Disk.Volume); it persists across stop/start, is
	// copied by clones and lost when the disk is destroyed.
	WriteImage(volume string, img Image) error
	// PoweredOff tells Proxmox the guest turned itself off: qemu exits and
	// the VM is stopped. Calls from a guest that was since replaced (the VM
	// rebooted or was reset) are ignored.
	PoweredOff()
}

// BasicBooter is a trivial guest for tests without Talos: it boots when the
// first boot device holds an image downloaded from a URL, runs a QEMU guest
// agent when that URL contains "agent" (for example "?agent=1" or
// "qemu-guest-agent"), reports the cloud-init addresses, and shuts down
// promptly.
func BasicBooter(ctx context.Context, vm BootInfo, host Host) Guest {
	img := bootImage(vm)
	if img == nil {
		return nil
	}
	g := &basicGuest{info: AgentInfo{
		Hostname:      vm.Name,
		OSID:          "lablinux",
		OSName:        "Lab Linux",
		OSVersion:     "1.0",
		KernelRelease: "6.12.0-lab",
	}, hasAgent: containsFold(img.SourceURL, "agent")}
	if vm.CloudInit != nil && vm.CloudInit.Hostname != "" {
		g.info.Hostname = vm.CloudInit.Hostname
	}
	g.info.Interfaces = append(g.info.Interfaces, AgentInterface{Name: "lo", MAC: "00:00:00:00:00:00", Addresses: []string{"127.0.0.1/8", "::1/128"}})
	for i, nic := range vm.NICs {
		ai := AgentInterface{Name: "eth" + itoa(i), MAC: lower(nic.MAC)}
		if vm.CloudInit != nil {
			if ipc, ok := vm.CloudInit.IPConfigs[nic.Name]; ok {
				if ipc.IP != "" && ipc.IP != "dhcp" && ipc.IP != "manual" {
					ai.Addresses = append(ai.Addresses, ipc.IP)
				}
				if ipc.IP6 != "" && ipc.IP6 != "dhcp" && ipc.IP6 != "auto" && ipc.IP6 != "manual" {
					ai.Addresses = append(ai.Addresses, ipc.IP6)
				}
			}
		}
		g.info.Interfaces = append(g.info.Interfaces, ai)
	}
	return g
}

func bootImage(vm BootInfo) *Image {
	for _, dev := range vm.BootOrder {
		for _, d := range vm.Disks {
			if d.Interface == dev && (d.Image.SourceURL != "" || d.Image.Written != "") {
				img := d.Image
				return &img
			}
		}
	}
	return nil
}

type basicGuest struct {
	info     AgentInfo
	hasAgent bool
}

func (g *basicGuest) PowerOff() {}

func (g *basicGuest) Shutdown(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Millisecond):
		return nil
	}
}

func (g *basicGuest) Agent() (AgentInfo, bool) { return g.info, g.hasAgent }
