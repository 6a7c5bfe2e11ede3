package cluster

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumix"

	"github.com/proxmoxtalos/proxmoxtalos/provider/childargs"
	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
	"github.com/proxmoxtalos/proxmoxtalos/provider/proxmox"
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

// childTokens are the child resources' tokens by their Args types
// (TestChildTokensMatchTheSchema holds them to the schema).
var childTokens = map[reflect.Type]string{
	reflect.TypeFor[proxmox.VirtualMachineArgs]():       tokenVirtualMachine,
	reflect.TypeFor[proxmox.DownloadFileArgs]():         tokenDownloadFile,
	reflect.TypeFor[talos.ImageFactorySchematicArgs]():  tokenSchematic,
	reflect.TypeFor[talos.MachineSecretsArgs]():         tokenMachineSecrets,
	reflect.TypeFor[talos.ConfigurationApplyArgs]():     tokenConfigurationApply,
	reflect.TypeFor[talos.BootstrapArgs]():              tokenBootstrap,
	reflect.TypeFor[talos.KubeconfigArgs]():             tokenKubeconfig,
	reflect.TypeFor[talos.ClusterHealthArgs]():          tokenClusterHealth,
	reflect.TypeFor[talos.ControlPlaneComponentsArgs](): tokenControlPlaneComponents,
}

// registerChild registers a child resource, of the type its args (a
// pointer to the provider's own Args type, see package childargs) are
// for, with bindings for the fields whose values are outputs.
func registerChild(ctx *pulumi.Context, name string, args any, binds []childargs.Binding, res pulumi.CustomResource, opts ...pulumi.ResourceOption) error {
	token, ok := childTokens[reflect.TypeOf(args).Elem()]
	if !ok {
		return fmt.Errorf("registering %s: no child resource takes a %T", name, args)
	}
	if want := childOutputs[token]; reflect.TypeOf(res).Elem() != want {
		return fmt.Errorf("registering %s %s: its outputs are read through a %T, but the engine's answers for the type keep only the outputs of %s (childOutputs)", token, name, res, want)
	}
	props, err := childargs.Map(args, binds...)
	if err != nil {
		return fmt.Errorf("registering %s %s: %w", token, name, err)
	}
	registerEcho(ctx.Context(), token, name)
	return registerShallow(ctx, token, name, props, res, opts...)
}

// childOutputs are, by token, the types through which the component reads
// its children's outputs: the engine's answers to its registrations keep
// only the outputs these name (framework.KeepOutputs, once per type).
var childOutputs = map[string]reflect.Type{
	tokenVirtualMachine:         reflect.TypeFor[virtualMachine](),
	tokenDownloadFile:           reflect.TypeFor[downloadFile](),
	tokenSchematic:              reflect.TypeFor[schematic](),
	tokenMachineSecrets:         reflect.TypeFor[machineSecrets](),
	tokenConfigurationApply:     reflect.TypeFor[configurationApply](),
	tokenBootstrap:              reflect.TypeFor[bootstrap](),
	tokenKubeconfig:             reflect.TypeFor[kubeconfig](),
	tokenClusterHealth:          reflect.TypeFor[clusterHealth](),
	tokenControlPlaneComponents: reflect.TypeFor[controlPlaneComponents](),
}

func init() {
	for token, t := range childOutputs {
		framework.KeepOutputs(token, outputNames(t))
	}
}

// outputNames are the outputs t, one of the child types below, reads.
func outputNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("pulumi"), ","); name != "" {
			names = append(names, name)
		}
	}
	return names
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
