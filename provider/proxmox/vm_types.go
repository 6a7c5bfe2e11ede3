package proxmox

import (
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/proxmoxtalos/proxmoxtalos/provider/docs"
	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// VirtualMachine is a QEMU virtual machine on a Proxmox VE node.
type VirtualMachine struct{}

// Annotate documents the resource.
func (vm *VirtualMachine) Annotate(a infer.Annotator) {
	a.Describe(vm, docs.Description("proxmoxtalos:proxmox:VirtualMachine"))
}

// VirtualMachineArgs are the inputs of a VirtualMachine.
type VirtualMachineArgs struct {
	Node              string                        `pulumi:"node"`
	VMID              *int                          `pulumi:"vmId,optional"`
	Name              *string                       `pulumi:"name,optional"`
	Description       *string                       `pulumi:"description,optional"`
	Tags              []string                      `pulumi:"tags,optional"`
	Pool              *string                       `pulumi:"pool,optional"`
	Clone             *VirtualMachineClone          `pulumi:"clone,optional"`
	ISO               *string                       `pulumi:"iso,optional"`
	CPU               *VirtualMachineCpu            `pulumi:"cpu,optional"`
	Memory            *VirtualMachineMemory         `pulumi:"memory,optional"`
	Bios              *Bios                         `pulumi:"bios,optional"`
	EfiDisk           *VirtualMachineEfiDisk        `pulumi:"efiDisk,optional"`
	Machine           *string                       `pulumi:"machine,optional"`
	ScsiHardware      *ScsiHardware                 `pulumi:"scsiHardware,optional"`
	OsType            *OsType                       `pulumi:"osType,optional"`
	Disks             []VirtualMachineDisk          `pulumi:"disks,optional"`
	NetworkDevices    []VirtualMachineNetworkDevice `pulumi:"networkDevices,optional"`
	CloudInit         *VirtualMachineCloudInit      `pulumi:"cloudInit,optional"`
	Agent             *VirtualMachineAgent          `pulumi:"agent,optional"`
	SmbiosUUID        *string                       `pulumi:"smbiosUuid,optional"`
	OnBoot            *bool                         `pulumi:"onBoot,optional"`
	Started           *bool                         `pulumi:"started,optional"`
	StopOnDestroy     *bool                         `pulumi:"stopOnDestroy,optional"`
	ShutdownTimeout   *int                          `pulumi:"shutdownTimeout,optional"`
	RebootAfterUpdate *bool                         `pulumi:"rebootAfterUpdate,optional"`
	Template          *bool                         `pulumi:"template,optional"`
}

// Annotate documents the inputs.
func (a *VirtualMachineArgs) Annotate(an infer.Annotator) {
	framework.Annotate(an, a, func() {
		an.Describe(&a.Node, "The Proxmox VE node the VM runs on. Changing it replaces the VM (no migration).")
		an.Describe(&a.VMID, "The VMID (100 to 999999999). Default: allocated safely when the VM is created, also when "+
			"many VMs are created at once. Changing it replaces the VM.")
		an.Describe(&a.Name, "The VM name, a DNS name. Proxmox also uses it as the cloud-init hostname.")
		an.Describe(&a.Description, "Free-form notes shown in the Proxmox UI.")
		an.Describe(&a.Tags, "Tags (letters, digits, `_ - + .`), stored lower-case. Compared as a set: order does not "+
			"matter. `[]` removes all tags.")
		an.Describe(&a.Pool, "The resource pool the VM belongs to. Changed in place; `\"\"` takes the VM out of its pool.")
		an.Describe(&a.Clone, "Clone this VM or template instead of creating an empty VM. Changing it replaces the VM.")
		an.Describe(&a.ISO, "An ISO volume to insert in the CD drive `ide2` and boot from after the first disk, "+
			"`<storage>:iso/<file>` (for example the `volumeId` of a DownloadFile). Changed in place; `\"\"` ejects it "+
			"and removes the CD drive.")
		an.Describe(&a.CPU, "CPU topology and model.")
		an.Describe(&a.Memory, "Memory. Default: Proxmox's 512 MiB.")
		an.Describe(&a.Bios, "Firmware. Default `seabios`.")
		an.Describe(&a.EfiDisk, "The EFI variables disk for `bios: ovmf`.")
		an.Describe(&a.Machine, "The QEMU machine type, for example `q35` or `pc-q35-9.0`. Default: Proxmox's (`i440fx`).")
		an.Describe(&a.ScsiHardware, "The SCSI controller. Default: Proxmox's `lsi`; `virtio-scsi-single` is the usual choice.")
		an.Describe(&a.OsType, "The guest OS type. Default: Proxmox's `other`; use `l26` for Linux and Talos.")
		an.Describe(&a.Disks, "Disks, each on its own interface. Growing a disk is done in place; shrinking is refused. "+
			"A disk removed from the list is deleted with its data. A clone keeps the template's disks: list a template "+
			"disk's interface to grow it.")
		an.Describe(&a.NetworkDevices, "Network devices; the first is `net0`, the next `net1`, and so on.")
		an.Describe(&a.CloudInit, "A Proxmox cloud-init drive (NoCloud) with network settings; no file is uploaded.")
		an.Describe(&a.Agent, "The QEMU guest agent. The guest must run the agent (Talos: the `qemu-guest-agent` extension).")
		an.Describe(&a.SmbiosUUID, "The SMBIOS (type 1) UUID the guest sees. Default: generated by Proxmox.")
		an.Describe(&a.OnBoot, "Start the VM when the Proxmox node boots. Default `false`.")
		an.Describe(&a.Started, "Keep the VM running. Default `true`: the VM is started after create and after it was "+
			"stopped outside Pulumi; `false` shuts it down.")
		an.Describe(&a.StopOnDestroy, "On destroy, stop the VM at once instead of a graceful shutdown. Default `false`.")
		an.Describe(&a.ShutdownTimeout, "Seconds to wait for a graceful shutdown (on destroy, on `started: false`, and for "+
			"restarts) before the VM is stopped hard. Default 180.")
		an.Describe(&a.RebootAfterUpdate, "Restart a running VM when an update leaves changes that Proxmox applies only "+
			"at the next start (for example CPU cores or memory without hotplug). Default `true`; with `false` the "+
			"changes stay pending until the VM restarts and the update warns about it.")
		an.Describe(&a.Template, "Make the VM a template once it is created and configured (Proxmox's \"Convert to "+
			"template\"): it is never started, its disks become read-only base volumes, and other VMs clone it "+
			"(`clone.vmId`), linked clones included. Default `false`. A VM turns into a template in place (it is shut "+
			"down first); a template cannot turn back into a VM, so setting `false` replaces it. A template's disks "+
			"cannot move to another storage.")
	})
}

// VirtualMachineState is the state of a VirtualMachine: its inputs as
// observed in Proxmox, and the outputs.
type VirtualMachineState struct {
	VirtualMachineArgs
	// VMID shadows the optional input: the VMID the VM has.
	VMID int `pulumi:"vmId"`
	// SmbiosUUID shadows the optional input: the UUID the VM has.
	SmbiosUUID    string   `pulumi:"smbiosUuid"`
	Status        string   `pulumi:"status"`
	MACAddresses  []string `pulumi:"macAddresses"`
	IPv4Addresses []string `pulumi:"ipv4Addresses"`
	IPv6Addresses []string `pulumi:"ipv6Addresses"`
}

// Annotate documents the outputs.
func (s *VirtualMachineState) Annotate(a infer.Annotator) {
	framework.Annotate(a, s, func() {
		a.Describe(&s.VMID, "The VMID of the VM.")
		a.Describe(&s.SmbiosUUID, "The SMBIOS (type 1) UUID of the VM.")
		a.Describe(&s.Status, "The power state Proxmox reports: `running`, `stopped`, or `paused` for a VM whose QEMU was paused outside Pulumi (`qm suspend` without `--todisk`, the UI's Pause); the next update resumes a paused VM that should run. `unknown` when the last create or update failed part-way (the next update finishes it).")
		a.Describe(&s.MACAddresses, "The MAC address of each network device, in order (`net0` first).")
		a.Describe(&s.IPv4Addresses, "IPv4 addresses the guest agent reports, the loopback interface excluded. Empty when the agent "+
			"is disabled or does not answer.")
		a.Describe(&s.IPv6Addresses, "IPv6 addresses the guest agent reports, the loopback interface and link-local addresses excluded.")
	})
}

// VirtualMachineClone names the VM or template to clone.
type VirtualMachineClone struct {
	VMID    int     `pulumi:"vmId"`
	Node    *string `pulumi:"node,optional"`
	Full    *bool   `pulumi:"full,optional"`
	Storage *string `pulumi:"storage,optional"`
}

// Annotate documents the clone source.
func (c *VirtualMachineClone) Annotate(a infer.Annotator) {
	framework.Annotate(a, c, func() {
		a.Describe(c, "The VM or template a VirtualMachine is cloned from (full copy by default, or linked clone). Changing it replaces the VM.")
		a.Describe(&c.VMID, "The VMID of the VM or template to clone.")
		a.Describe(&c.Node, "The node that holds the source. Default: the VM's `node`. With local storage the "+
			"source must be on the VM's node.")
		a.Describe(&c.Full, "Make a full, independent copy. Default `true`; `false` makes a linked clone, "+
			"which needs a template as source.")
		a.Describe(&c.Storage, "The storage for the disks of a full clone. Default: the source disks' storage.")
	})
}

// VirtualMachineCpu is the CPU topology and model.
type VirtualMachineCpu struct {
	Cores   *int    `pulumi:"cores,optional"`
	Sockets *int    `pulumi:"sockets,optional"`
	Type    *string `pulumi:"type,optional"`
}

// Annotate documents the CPU settings.
func (c *VirtualMachineCpu) Annotate(a infer.Annotator) {
	framework.Annotate(a, c, func() {
		a.Describe(c, "The VM's CPU: cores per socket and sockets (default 1 each) and the emulated CPU model.")
		a.Describe(&c.Cores, "Cores per socket. Default 1.")
		a.Describe(&c.Sockets, "CPU sockets. Default 1.")
		a.Describe(&c.Type, "The emulated CPU model, for example `host` or `x86-64-v2-AES`. Default: Proxmox's.")
	})
}

// VirtualMachineMemory is the memory setting.
type VirtualMachineMemory struct {
	Dedicated int  `pulumi:"dedicated"`
	Floating  *int `pulumi:"floating,optional"`
}

// Annotate documents the memory settings.
func (m *VirtualMachineMemory) Annotate(a infer.Annotator) {
	framework.Annotate(a, m, func() {
		a.Describe(m, "The VM's memory in MiB, and the balloon floor it may be shrunk to.")
		a.Describe(&m.Dedicated, "Memory in MiB (at least 16).")
		a.Describe(&m.Floating, "The balloon minimum in MiB: the guest may be shrunk down to this. `0` disables the "+
			"balloon device. Default: Proxmox's (ballooning up to `dedicated`).")
	})
}

// VirtualMachineEfiDisk is the EFI variables disk.
type VirtualMachineEfiDisk struct {
	Storage         string `pulumi:"storage"`
	PreEnrolledKeys *bool  `pulumi:"preEnrolledKeys,optional"`
}

// Annotate documents the EFI disk.
func (e *VirtualMachineEfiDisk) Annotate(a infer.Annotator) {
	framework.Annotate(a, e, func() {
		a.Describe(e, "The EFI variables disk of a UEFI (`ovmf`) VM (4 MiB).")
		a.Describe(&e.Storage, "The storage for the EFI disk (4 MiB, `efitype=4m`). Changing it moves the disk.")
		a.Describe(&e.PreEnrolledKeys, "Enroll the distribution and Microsoft Secure Boot keys. Default `false`. "+
			"Keys are enrolled when the disk is created: changing this replaces the VM.")
	})
}

// VirtualMachineDisk is one disk.
type VirtualMachineDisk struct {
	Interface  string     `pulumi:"interface"`
	Storage    string     `pulumi:"storage"`
	Size       int        `pulumi:"size"`
	SSD        *bool      `pulumi:"ssd,optional"`
	Discard    *bool      `pulumi:"discard,optional"`
	IOThread   *bool      `pulumi:"iothread,optional"`
	Cache      *DiskCache `pulumi:"cache,optional"`
	ImportFrom *string    `pulumi:"importFrom,optional"`
}

// Annotate documents a disk.
func (d *VirtualMachineDisk) Annotate(a infer.Annotator) {
	framework.Annotate(a, d, func() {
		a.Describe(d, "A VM disk: bus and slot, storage, size in GiB (grows in place, never shrinks) and drive options.")
		a.Describe(&d.Interface, "The bus and slot: `scsi0`-`scsi30`, `virtio0`-`virtio15`, `sata0`-`sata5` or "+
			"`ide0`-`ide3`. Talos sees scsi and sata disks as `/dev/sda`..., virtio disks as `/dev/vda`....")
		a.Describe(&d.Storage, "The storage that holds the disk (content type `images`), for example `local-lvm`. "+
			"Changing it moves the disk.")
		a.Describe(&d.Size, "The size in GiB. It can grow in place; shrinking is refused.")
		a.Describe(&d.SSD, "Present the disk to the guest as an SSD. Default `false`. Not for virtio disks.")
		a.Describe(&d.Discard, "Pass TRIM/discard requests to the storage. Default `false`.")
		a.Describe(&d.IOThread, "Give the disk its own I/O thread (virtio, or scsi with `virtio-scsi-single`). Default `false`.")
		a.Describe(&d.Cache, "The host cache mode. Default `none`.")
		a.Describe(&d.ImportFrom, "Fill the new disk with a copy of this volume instead of leaving it blank: a disk "+
			"image `<storage>:import/<file>` (`.raw`, `.qcow2` or `.vmdk`; the `volumeId` of a DownloadFile with "+
			"content `import`, such as a Talos `nocloud-amd64.qcow2` from the Image Factory) or another VM's disk "+
			"(`<storage>:vm-<vmid>-disk-<n>`). The volume must be on a storage the VM's node can read. Proxmox copies "+
			"it when the disk is created, then the disk grows to `size`, which must be at least the image's size. "+
			"Used only when the disk is created: changing it later records the new source but leaves the disk as it "+
			"is (replace the VM to start again from an image; upgrade Talos through its API).")
	})
}

// VirtualMachineNetworkDevice is one NIC.
type VirtualMachineNetworkDevice struct {
	Bridge     string        `pulumi:"bridge"`
	Model      *NetworkModel `pulumi:"model,optional"`
	VLANID     *int          `pulumi:"vlanId,optional"`
	MACAddress *string       `pulumi:"macAddress,optional"`
	MTU        *int          `pulumi:"mtu,optional"`
	Firewall   *bool         `pulumi:"firewall,optional"`
}

// Annotate documents a NIC.
func (n *VirtualMachineNetworkDevice) Annotate(a infer.Annotator) {
	framework.Annotate(a, n, func() {
		a.Describe(n, "A VM network device (`netN`): bridge, model, VLAN tag, MAC address, MTU and firewall.")
		a.Describe(&n.Bridge, "The bridge on the node to attach to, for example `vmbr0`. It must exist on the node.")
		a.Describe(&n.Model, "The NIC model. Default `virtio`.")
		a.Describe(&n.VLANID, "The VLAN tag (1 to 4094); `0` removes the tag. Default: untagged.")
		a.Describe(&n.MACAddress, "The MAC address (unicast, `XX:XX:XX:XX:XX:XX`). Default: generated by Proxmox and "+
			"kept across updates.")
		a.Describe(&n.MTU, "The MTU (576 to 65520; `1` uses the bridge's MTU). VirtIO only. Default: the bridge's.")
		a.Describe(&n.Firewall, "Filter the NIC with the Proxmox firewall. Default `false`.")
	})
}

// VirtualMachineCloudInit is the Proxmox cloud-init drive.
type VirtualMachineCloudInit struct {
	Storage   string                   `pulumi:"storage"`
	Interface *string                  `pulumi:"interface,optional"`
	IPConfigs []VirtualMachineIpConfig `pulumi:"ipConfigs,optional"`
	DNS       *VirtualMachineDns       `pulumi:"dns,optional"`
}

// Annotate documents the cloud-init drive.
func (c *VirtualMachineCloudInit) Annotate(a infer.Annotator) {
	framework.Annotate(a, c, func() {
		a.Describe(c, "Proxmox generates a NoCloud cloud-init drive from these settings when the VM starts "+
			"(`citype: nocloud`). Changes reach the guest at its next boot.")
		a.Describe(&c.Storage, "The storage for the generated cloud-init drive, for example `local-lvm`.")
		a.Describe(&c.Interface, "The drive slot of the cloud-init drive. Default `ide0` (the ISO uses `ide2`).")
		a.Describe(&c.IPConfigs, "Addresses per network device, in order: the first entry configures `net0`.")
		a.Describe(&c.DNS, "DNS resolver settings.")
	})
}

// VirtualMachineIpConfig configures the addresses of one NIC.
type VirtualMachineIpConfig struct {
	IPv4 *VirtualMachineIpAddress `pulumi:"ipv4,optional"`
	IPv6 *VirtualMachineIpAddress `pulumi:"ipv6,optional"`
}

// Annotate documents one NIC's addresses.
func (c *VirtualMachineIpConfig) Annotate(a infer.Annotator) {
	framework.Annotate(a, c, func() {
		a.Describe(c, "The addresses of one network device, given through the cloud-init drive (`ipconfigN`).")
		a.Describe(&c.IPv4, "The IPv4 address and gateway.")
		a.Describe(&c.IPv6, "The IPv6 address and gateway.")
	})
}

// VirtualMachineIpAddress is one address setting.
type VirtualMachineIpAddress struct {
	Address string  `pulumi:"address"`
	Gateway *string `pulumi:"gateway,optional"`
}

// Annotate documents an address setting.
func (c *VirtualMachineIpAddress) Annotate(a infer.Annotator) {
	framework.Annotate(a, c, func() {
		a.Describe(c, "One address (with prefix length, or `dhcp`) and its gateway.")
		a.Describe(&c.Address, "An address with prefix length (`192.168.1.21/24`, `fd00::21/64`), or `dhcp`; "+
			"for IPv6 also `auto` (SLAAC).")
		a.Describe(&c.Gateway, "The default gateway; only with a static address.")
	})
}

// VirtualMachineDns is the resolver configuration.
type VirtualMachineDns struct {
	Servers []string `pulumi:"servers,optional"`
	Domain  *string  `pulumi:"domain,optional"`
}

// Annotate documents the resolver settings.
func (d *VirtualMachineDns) Annotate(a infer.Annotator) {
	framework.Annotate(a, d, func() {
		a.Describe(d, "DNS servers and search domain given through the cloud-init drive.")
		a.Describe(&d.Servers, "DNS server addresses. Default: the Proxmox node's.")
		a.Describe(&d.Domain, "The DNS search domain. Default: the Proxmox node's.")
	})
}

// VirtualMachineAgent configures the QEMU guest agent.
type VirtualMachineAgent struct {
	Enabled        *bool `pulumi:"enabled,optional"`
	WaitForAddress *bool `pulumi:"waitForAddress,optional"`
	Timeout        *int  `pulumi:"timeout,optional"`
}

// Annotate documents the agent settings.
func (g *VirtualMachineAgent) Annotate(a infer.Annotator) {
	framework.Annotate(a, g, func() {
		a.Describe(g, "The QEMU guest agent channel, and whether to wait after start until the agent reports an address (default timeout 300 seconds).")
		a.Describe(&g.Enabled, "Enable the guest agent channel. Default `true` when this block is given.")
		a.Describe(&g.WaitForAddress, "After start, wait until the agent reports an IP address, so that the "+
			"addresses are outputs. Default `true` when the agent is enabled.")
		a.Describe(&g.Timeout, "Seconds to wait for the agent to report an address. Default 300. When it does not, "+
			"the VM stays in the state and the next `up` waits again.")
	})
}
