package proxmox

import "github.com/pulumi/pulumi-go-provider/infer"

// Bios is the VM firmware.
type Bios string

// Values lists the firmware Proxmox offers.
func (Bios) Values() []infer.EnumValue[Bios] {
	return []infer.EnumValue[Bios]{
		{Name: "Seabios", Value: "seabios", Description: "Legacy BIOS (Proxmox default)."},
		{Name: "Ovmf", Value: "ovmf", Description: "UEFI firmware; give an `efiDisk` to keep EFI variables."},
	}
}

// Annotate documents the type.
func (e *Bios) Annotate(a infer.Annotator) {
	a.Describe(e, "VM firmware (Proxmox `bios`).")
}

// ScsiHardware is the SCSI controller model.
type ScsiHardware string

// Values lists the controllers of the Proxmox `scsihw` option.
func (ScsiHardware) Values() []infer.EnumValue[ScsiHardware] {
	return []infer.EnumValue[ScsiHardware]{
		{Name: "Lsi", Value: "lsi", Description: "LSI 53C895A (Proxmox default)."},
		{Name: "Lsi53c810", Value: "lsi53c810", Description: "LSI 53C810."},
		{Name: "VirtioScsiPci", Value: "virtio-scsi-pci", Description: "VirtIO SCSI."},
		{Name: "VirtioScsiSingle", Value: "virtio-scsi-single", Description: "VirtIO SCSI, one controller per disk (allows iothread)."},
		{Name: "Megasas", Value: "megasas", Description: "LSI MegaRAID SAS."},
		{Name: "Pvscsi", Value: "pvscsi", Description: "VMware paravirtual SCSI."},
	}
}

// Annotate documents the type.
func (e *ScsiHardware) Annotate(a infer.Annotator) {
	a.Describe(e, "SCSI controller model of the VM (Proxmox `scsihw`).")
}

// OsType tells Proxmox which guest OS to optimize for.
type OsType string

// Values lists the Proxmox `ostype` values.
func (OsType) Values() []infer.EnumValue[OsType] {
	v := func(name, value, desc string) infer.EnumValue[OsType] {
		return infer.EnumValue[OsType]{Name: name, Value: OsType(value), Description: desc}
	}
	return []infer.EnumValue[OsType]{
		v("Other", "other", "Unspecified OS (Proxmox default)."),
		v("L26", "l26", "Linux 2.6 or later (Talos)."),
		v("L24", "l24", "Linux 2.4."),
		v("Win11", "win11", "Windows 11 / Server 2022 / 2025."),
		v("Win10", "win10", "Windows 10 / Server 2016 / 2019."),
		v("Win8", "win8", "Windows 8 / Server 2012."),
		v("Win7", "win7", "Windows 7."),
		v("W2k8", "w2k8", "Windows Server 2008."),
		v("Wvista", "wvista", "Windows Vista."),
		v("W2k3", "w2k3", "Windows Server 2003."),
		v("W2k", "w2k", "Windows 2000."),
		v("Wxp", "wxp", "Windows XP."),
		v("Solaris", "solaris", "Solaris, OpenSolaris, OpenIndiana."),
	}
}

// Annotate documents the type.
func (e *OsType) Annotate(a infer.Annotator) {
	a.Describe(e, "Guest operating system Proxmox tunes the VM for (Proxmox `ostype`).")
}

// DiskCache is a disk's host cache mode.
type DiskCache string

// Values lists the Proxmox drive `cache` modes.
func (DiskCache) Values() []infer.EnumValue[DiskCache] {
	return []infer.EnumValue[DiskCache]{
		{Name: "None", Value: "none", Description: "No host cache (Proxmox default)."},
		{Name: "Writethrough", Value: "writethrough", Description: "Host page cache for reads, writes synced."},
		{Name: "Writeback", Value: "writeback", Description: "Host page cache for reads and writes."},
		{Name: "Unsafe", Value: "unsafe", Description: "Like writeback, ignoring flushes (data loss on host crash)."},
		{Name: "Directsync", Value: "directsync", Description: "No host cache, writes synced."},
	}
}

// Annotate documents the type.
func (e *DiskCache) Annotate(a infer.Annotator) {
	a.Describe(e, "Host cache mode of a disk (Proxmox drive option `cache`).")
}

// NetworkModel is the emulated network card.
type NetworkModel string

// Values lists the common Proxmox NIC models.
func (NetworkModel) Values() []infer.EnumValue[NetworkModel] {
	return []infer.EnumValue[NetworkModel]{
		{Name: "Virtio", Value: "virtio", Description: "VirtIO paravirtualized (default; fastest)."},
		{Name: "E1000", Value: "e1000", Description: "Intel E1000."},
		{Name: "E1000e", Value: "e1000e", Description: "Intel E1000E."},
		{Name: "Rtl8139", Value: "rtl8139", Description: "Realtek RTL8139."},
		{Name: "Vmxnet3", Value: "vmxnet3", Description: "VMware vmxnet3."},
	}
}

// Annotate documents the type.
func (e *NetworkModel) Annotate(a infer.Annotator) {
	a.Describe(e, "Emulated network card model (the model of Proxmox `netN`).")
}

// DownloadContent is the storage content type a download becomes.
type DownloadContent string

// Values lists the content types that download-url accepts for VM images.
func (DownloadContent) Values() []infer.EnumValue[DownloadContent] {
	return []infer.EnumValue[DownloadContent]{
		{Name: "Iso", Value: "iso", Description: "A CD/DVD image (`.iso`, `.img`) to boot a VM from."},
		{Name: "Import", Value: "import", Description: "A disk image (`.raw`, `.qcow2`, `.vmdk`, or an `.ova` archive) for a VirtualMachine disk's `importFrom` (Proxmox VE 8.4+; the storage needs content type `import`)."},
	}
}

// Annotate documents the type.
func (e *DownloadContent) Annotate(a infer.Annotator) {
	a.Describe(e, "Storage content type a downloaded file becomes (Proxmox `download-url` `content`).")
}

// ChecksumAlgorithm verifies a download.
type ChecksumAlgorithm string

// Values lists the algorithms of download-url.
func (ChecksumAlgorithm) Values() []infer.EnumValue[ChecksumAlgorithm] {
	return []infer.EnumValue[ChecksumAlgorithm]{
		{Name: "Md5", Value: "md5", Description: "MD5 (weak: only for mirrors that publish nothing else)."},
		{Name: "Sha1", Value: "sha1", Description: "SHA-1 (weak: only for mirrors that publish nothing else)."},
		{Name: "Sha224", Value: "sha224", Description: "SHA-224."},
		{Name: "Sha256", Value: "sha256", Description: "SHA-256 (what the Talos releases publish)."},
		{Name: "Sha384", Value: "sha384", Description: "SHA-384."},
		{Name: "Sha512", Value: "sha512", Description: "SHA-512 (what the Talos releases publish)."},
	}
}

// Annotate documents the type.
func (e *ChecksumAlgorithm) Annotate(a infer.Annotator) {
	a.Describe(e, "Hash algorithm of a download's expected checksum (Proxmox `download-url` `checksum-algorithm`).")
}

// Decompression is how Proxmox unpacks a downloaded file.
type Decompression string

// Values lists the decompression algorithms of download-url.
func (Decompression) Values() []infer.EnumValue[Decompression] {
	return []infer.EnumValue[Decompression]{
		{Name: "Gz", Value: "gz", Description: "gzip (`.gz`)."},
		{Name: "Lzo", Value: "lzo", Description: "LZO (`.lzo`)."},
		{Name: "Zst", Value: "zst", Description: "Zstandard (`.zst`)."},
		{Name: "Bz2", Value: "bz2", Description: "bzip2 (`.bz2`)."},
	}
}

// Annotate documents the type.
func (e *Decompression) Annotate(a infer.Annotator) {
	a.Describe(e, "Compression of the downloaded file, which Proxmox decompresses before storing it (Proxmox `download-url` `compression`).")
}
