package talos

import (
	"net/netip"
)

// Machine is what the hypervisor gives a guest when the VM starts: its
// hardware, boot media and cloud-init data. The lab's Proxmox half fills it.
type Machine struct {
	Name string // VM name
	VMID int
	UUID string // SMBIOS uuid

	Disks      []Disk
	CDROM      string   // source URL of the attached ISO ("" when none or not downloaded by URL)
	CDROMDrive string   // the drive holding that ISO ("ide2"); "": any non-disk boot entry
	BootOrder  []string // device names ("scsi0", "ide2", "net0"); empty: disks, then the CD-ROM
	NICs       []NIC
	CloudInit  *CloudInit // nil: no cloud-init drive attached
	UEFI       bool       // OVMF firmware
	Cores      int
	MemoryMiB  int
}

// Disk is one VM disk as the guest sees it.
type Disk struct {
	Name      string // Proxmox interface name: scsi0, virtio0, sata0, ide0
	SizeBytes uint64
	SSD       bool
	SourceURL string // the image the disk was imported from, if any (a Talos disk image boots)
	Content   string // what a guest wrote onto the disk (see Host.WriteDisk); "" when blank
}

// NIC is one network card.
type NIC struct {
	Name string // net0
	MAC  string
}

// CloudInit is the NoCloud data of Proxmox's cloud-init drive.
type CloudInit struct {
	Hostname     string
	Interfaces   []IPConfig // index i configures NIC i (ipconfig<i>)
	Nameservers  []netip.Addr
	SearchDomain string
}

// IPConfig is one ipconfigN line: a static address or DHCP.
type IPConfig struct {
	DHCP    bool
	Address netip.Prefix // static address, valid when !DHCP
	Gateway netip.Addr
}

// Host is what a running guest can ask of its hypervisor.
type Host interface {
	// WriteDisk records content on a disk (by interface name); it persists
	// across stop and start, and is lost when the disk is destroyed.
	WriteDisk(disk, content string) error
	// PoweredOff tells the hypervisor that the guest turned itself off.
	PoweredOff()
}

// AgentInfo is what the QEMU guest agent reports.
type AgentInfo struct {
	Hostname   string
	OSName     string // "Talos"
	OSVersion  string // "v1.12.5"
	Interfaces []AgentInterface
}

// AgentInterface is one interface as the guest agent reports it.
type AgentInterface struct {
	Name      string
	MAC       string
	Addresses []netip.Prefix
}
