package provider

import (
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/proxmoxtalos/proxmoxtalos/provider/cluster"
	"github.com/proxmoxtalos/proxmoxtalos/provider/proxmox"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talos"
)

// describedEnums are the enum types whose own Annotate description goes into
// the schema (framework.DescribeEnums). TestSchemaDescribesEverything fails
// for an enum missing here.
var describedEnums = []infer.Annotated{
	new(cluster.DiskBus), new(cluster.TaintEffect), new(cluster.CniName), new(cluster.GitOpsTool),
	new(cluster.NodeRole),
	new(proxmox.Bios), new(proxmox.ScsiHardware), new(proxmox.OsType), new(proxmox.DiskCache),
	new(proxmox.NetworkModel), new(proxmox.DownloadContent), new(proxmox.ChecksumAlgorithm),
	new(proxmox.Decompression),
	new(talos.ApplyMode), new(talos.MachineType), new(talos.ValidationMode), new(talos.Architecture),
}
