package proxmox

import (
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/proxmoxtalos/proxmoxtalos/provider/docs"
	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// DownloadFile is a file a Proxmox node downloads into one of its storages.
type DownloadFile struct{}

// Annotate documents the resource.
func (d *DownloadFile) Annotate(a infer.Annotator) {
	a.Describe(d, docs.Description("proxmoxtalos:proxmox:DownloadFile"))
}

// DownloadFileArgs are the inputs of a DownloadFile.
type DownloadFileArgs struct {
	Node               string             `pulumi:"node"`
	Storage            string             `pulumi:"storage"`
	URL                string             `pulumi:"url"`
	Content            *DownloadContent   `pulumi:"content,optional"`
	FileName           *string            `pulumi:"fileName,optional"`
	Checksum           *string            `pulumi:"checksum,optional"`
	ChecksumAlgorithm  *ChecksumAlgorithm `pulumi:"checksumAlgorithm,optional"`
	Decompression      *Decompression     `pulumi:"decompression,optional"`
	VerifyCertificates *bool              `pulumi:"verifyCertificates,optional"`
	Overwrite          *bool              `pulumi:"overwrite,optional"`
	Shared             *bool              `pulumi:"shared,optional"`
}

// Annotate documents the inputs.
func (d *DownloadFileArgs) Annotate(a infer.Annotator) {
	framework.Annotate(a, d, func() {
		a.Describe(&d.Node, "The node that downloads the file and holds it (unless the storage is shared).")
		a.Describe(&d.Storage, "The storage to download into; it must be configured for the content type (for example `local`).")
		a.Describe(&d.URL, "The http or https URL to download.")
		a.Describe(&d.Content, "What the file is: `iso` (default) or `import` (a disk image, Proxmox VE 8.4+).")
		a.Describe(&d.FileName, "The file name in the storage: letters, digits, `_ . -` only, ending in `.iso`/`.img` "+
			"for ISOs and `.raw`/`.qcow2`/`.vmdk`/`.ova` for imports. Default: the last part of the URL (without the "+
			"compression suffix). Give one that names the version, such as `talos-v1.12.5-nocloud-amd64.iso`.")
		a.Describe(&d.Checksum, "The expected checksum (hex) of the downloaded file; Proxmox fails the download when it differs.")
		a.Describe(&d.ChecksumAlgorithm, "The algorithm of `checksum`. Required with `checksum`.")
		a.Describe(&d.Decompression, "Decompress the download (ISOs only): `gz`, `lzo`, `zst` or `bz2`.")
		a.Describe(&d.VerifyCertificates, "Verify the download server's TLS certificate. Default `true`.")
		a.Describe(&d.Overwrite, "When a file of that name already exists in the storage, replace it. Default `false`: "+
			"the create fails instead, so that a file nobody manages is never deleted by surprise.")
		a.Describe(&d.Shared, "The file may be shared with other stacks and programs, because its name says what it holds "+
			"(such as `talos-v1.12.5-ce4c980550dd-nocloud-amd64.iso`): a file of that name that already exists is used as "+
			"it is instead of downloaded again, and a delete leaves the file in place while any VM still names it (a CD "+
			"drive or disk), saying which. Default `false`. TalosCluster shares its ISOs this way, so two clusters with the "+
			"same Talos version and schematic on one storage neither collide nor delete each other's ISO.")
	})
}

// DownloadFileState is the state of a DownloadFile.
type DownloadFileState struct {
	DownloadFileArgs
	// FileName shadows the optional input: the file's actual name.
	FileName string `pulumi:"fileName"`
	VolumeID string `pulumi:"volumeId"`
	Size     int    `pulumi:"size"`
}

// Annotate documents the outputs.
func (s *DownloadFileState) Annotate(a infer.Annotator) {
	framework.Annotate(a, s, func() {
		a.Describe(&s.FileName, "The name of the file in the storage.")
		a.Describe(&s.VolumeID, "The volume ID, `<storage>:<content>/<fileName>`, for example `local:iso/talos.iso`: "+
			"give it to a VirtualMachine's `iso`, or (content `import`) to a disk's `importFrom`.")
		a.Describe(&s.Size, "The size of the file in bytes.")
	})
}
