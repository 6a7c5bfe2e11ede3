package cluster

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Tokens of the resources the component fans out into (registered by this
// same provider in the proxmox and talos modules).
const (
	tokenComponent          = "proxmoxtalos:index:TalosCluster"
	tokenVirtualMachine     = "proxmoxtalos:proxmox:VirtualMachine"
	tokenDownloadFile       = "proxmoxtalos:proxmox:DownloadFile"
	tokenSchematic          = "proxmoxtalos:talos:ImageFactorySchematic"
	tokenMachineSecrets     = "proxmoxtalos:talos:MachineSecrets"
	tokenConfigurationApply = "proxmoxtalos:talos:ConfigurationApply"
	tokenBootstrap          = "proxmoxtalos:talos:Bootstrap"
	tokenKubeconfig         = "proxmoxtalos:talos:Kubeconfig"
	tokenClusterHealth      = "proxmoxtalos:talos:ClusterHealth"
)

// The child resources, with the outputs the component reads. Their inputs
// are given as property maps; the names match the resources' schemas
// (provider/proxmox, provider/talos).

type virtualMachine struct {
	pulumi.CustomResourceState
	VMID       pulumi.IntOutput    `pulumi:"vmId"`
	SmbiosUUID pulumi.StringOutput `pulumi:"smbiosUuid"`
}

type downloadFile struct {
	pulumi.CustomResourceState
	VolumeID pulumi.StringOutput `pulumi:"volumeId"`
}

type schematic struct {
	pulumi.CustomResourceState
	SchematicID pulumi.StringOutput `pulumi:"schematicId"`
}

type machineSecrets struct {
	pulumi.CustomResourceState
	MachineSecrets      pulumi.StringOutput    `pulumi:"machineSecrets"`
	ClientConfiguration pulumi.StringMapOutput `pulumi:"clientConfiguration"`
}

type configurationApply struct {
	pulumi.CustomResourceState
	ConfigDigest   pulumi.StringOutput `pulumi:"configDigest"`
	RunningVersion pulumi.StringOutput `pulumi:"runningVersion"`
}

type bootstrap struct {
	pulumi.CustomResourceState
}

type kubeconfig struct {
	pulumi.CustomResourceState
	Kubeconfig pulumi.StringOutput `pulumi:"kubeconfig"`
}

type clusterHealth struct {
	pulumi.CustomResourceState
	Nodes pulumi.StringMapOutput `pulumi:"nodes"`
}
