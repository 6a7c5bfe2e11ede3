package cluster

import (
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumix"

	"github.com/proxmoxtalos/proxmoxtalos/provider/childargs"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talos"
)

// Tokens of the resources the component fans out into (registered by this
// same provider in the proxmox and talos modules).
const (
	tokenComponent              = "proxmoxtalos:index:TalosCluster"
	tokenVirtualMachine         = "proxmoxtalos:proxmox:VirtualMachine"
	tokenDownloadFile           = "proxmoxtalos:proxmox:DownloadFile"
	tokenSchematic              = "proxmoxtalos:talos:ImageFactorySchematic"
	tokenMachineSecrets         = "proxmoxtalos:talos:MachineSecrets"
	tokenConfigurationApply     = "proxmoxtalos:talos:ConfigurationApply"
	tokenBootstrap              = "proxmoxtalos:talos:Bootstrap"
	tokenKubeconfig             = "proxmoxtalos:talos:Kubeconfig"
	tokenClusterHealth          = "proxmoxtalos:talos:ClusterHealth"
	tokenControlPlaneComponents = "proxmoxtalos:talos:ControlPlaneComponents"
)

// registerChild registers a child resource from its Go arguments (the
// provider's own Args type, see package childargs), with bindings for the
// fields whose values are outputs.
func registerChild(ctx *pulumi.Context, token, name string, args any, binds []childargs.Binding, res pulumi.CustomResource, opts ...pulumi.ResourceOption) error {
	props, err := childargs.Map(args, binds...)
	if err != nil {
		return fmt.Errorf("registering %s %s: %w", token, name, err)
	}
	return ctx.RegisterResource(token, name, props, res, opts...)
}

// The child resources, with the outputs the component reads: the names
// and types of fields of the resources' State types (provider/proxmox,
// provider/talos), which TestChildOutputsAreStateFields holds them to.

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
}

type machineSecrets struct {
	pulumi.CustomResourceState
	MachineSecrets      pulumi.StringOutput                       `pulumi:"machineSecrets"`
	ClientConfiguration pulumix.Output[talos.ClientConfiguration] `pulumi:"clientConfiguration"`
}

type configurationApply struct {
	pulumi.CustomResourceState
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
}

type controlPlaneComponents struct {
	pulumi.CustomResourceState
}
