package talos

import (
	"context"
	"fmt"

	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"

	"github.com/proxmoxtalos/proxmoxtalos/provider/docs"
	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// MachineType is the kind of node a configuration is for.
type MachineType string

// Values implements infer.Enum.
func (MachineType) Values() []infer.EnumValue[MachineType] {
	return []infer.EnumValue[MachineType]{
		{Name: "ControlPlane", Value: "controlplane", Description: "A control plane node (etcd, Kubernetes API server)."},
		{Name: "Worker", Value: "worker", Description: "A worker node."},
	}
}

// Annotate documents the type.
func (e *MachineType) Annotate(a infer.Annotator) {
	a.Describe(e, "The kind of node a machine configuration is for.")
}

// ValidationMode is the runtime mode a configuration is validated for.
type ValidationMode string

// Values implements infer.Enum.
func (ValidationMode) Values() []infer.EnumValue[ValidationMode] {
	return []infer.EnumValue[ValidationMode]{
		{Name: "Metal", Value: "metal", Description: "The node installs itself to disk (booted from an ISO): an install disk is required."},
		{Name: "Cloud", Value: "cloud", Description: "The node boots a ready disk image (cloud platforms such as nocloud): install instructions are optional."},
	}
}

// Annotate documents the type.
func (e *ValidationMode) Annotate(a infer.Annotator) {
	a.Describe(e, "The runtime mode a machine configuration is validated for.")
}

// GetMachineConfiguration generates a machine configuration.
//
// A function rather than a resource: the result is a pure, deterministic
// function of the inputs, so nothing needs to be stored twice; the resource
// that applies it to a node keeps it in state and diffs it path by path.
type GetMachineConfiguration struct{}

// GetMachineConfigurationArgs are the inputs.
type GetMachineConfigurationArgs struct {
	ClusterName       string          `pulumi:"clusterName"`
	ClusterEndpoint   string          `pulumi:"clusterEndpoint"`
	MachineType       MachineType     `pulumi:"machineType"`
	MachineSecrets    string          `pulumi:"machineSecrets" provider:"secret"`
	TalosVersion      string          `pulumi:"talosVersion,optional"`
	VersionContract   string          `pulumi:"versionContract,optional"`
	KubernetesVersion string          `pulumi:"kubernetesVersion,optional"`
	InstallDisk       string          `pulumi:"installDisk,optional"`
	InstallImage      string          `pulumi:"installImage"`
	AdditionalSans    []string        `pulumi:"additionalSans,optional"`
	ConfigPatches     []string        `pulumi:"configPatches,optional"`
	ValidationMode    *ValidationMode `pulumi:"validationMode,optional"`
}

// GetMachineConfigurationResult are the outputs.
type GetMachineConfigurationResult struct {
	MachineConfiguration string   `pulumi:"machineConfiguration" provider:"secret"`
	KubernetesVersion    string   `pulumi:"kubernetesVersion"`
	TalosVersion         string   `pulumi:"talosVersion"`
	Warnings             []string `pulumi:"warnings"`
}

// Annotate describes the function.
func (f *GetMachineConfiguration) Annotate(a infer.Annotator) {
	a.Describe(f, docs.Description("proxmoxtalos:talos:getMachineConfiguration"))
}

// Annotate describes the inputs.
func (a *GetMachineConfigurationArgs) Annotate(an infer.Annotator) {
	framework.Annotate(an, a, func() {
		an.Describe(&a.ClusterName, "Cluster name (Kubernetes cluster name and talosconfig context).")
		an.Describe(&a.ClusterEndpoint, "Kubernetes API URL every node uses, for example `https://192.168.1.220:6443` (a VIP, a load balancer or the first control plane).")
		an.Describe(&a.MachineType, "`controlplane` or `worker`.")
		an.Describe(&a.MachineSecrets, "The `machineSecrets` output of a MachineSecrets resource (or a `talosctl gen secrets` file). Secret.")
		an.Describe(&a.TalosVersion, "Talos version the node runs, for example `v1.14.1`. The configuration's version contract never "+
			"exceeds it (a 1.12 configuration on a 1.11 node is refused by the node). Supported: "+talosconfig.SupportedTalosVersions+
			". Default: the newest release this provider knows.")
		an.SetDefault(&a.TalosVersion, talosconfig.DefaultTalosVersion)
		an.Describe(&a.VersionContract, "Generate for an older Talos release than `talosVersion`, for example `v1.11` while "+
			"nodes are upgraded from 1.11 to 1.12, so that the configuration is valid on both. Never newer than "+
			"`talosVersion`. Default: the minor release of `talosVersion`, at most `v1.13`: the 1.14 contract moves the settings this "+
			"package and typical patches write out of the v1alpha1 document, and 1.14 nodes run 1.13 configurations as they are.")
		an.Describe(&a.KubernetesVersion, "Kubernetes version, like `v1.37.0` (`1.37.0` is the same; a release line such as "+
			"`v1.37` is refused); checked against the Talos support matrix. Default: the version the Talos release line "+
			"ships (`v1.35.4` for Talos v1.12, `v1.36.3` for v1.13, `v1.37.0` for v1.14).")
		an.Describe(&a.InstallDisk, "Disk Talos installs to: `/dev/sda` for a scsi disk, `/dev/vda` for a virtio disk.")
		an.SetDefault(&a.InstallDisk, "/dev/sda")
		an.Describe(&a.InstallImage, "Installer image, for example the `installerImage` of getImageFactory "+
			"(`factory.talos.dev/nocloud-installer/<schematic>:v1.12.5`). Changing it on a running node needs a Talos upgrade.")
		an.Describe(&a.AdditionalSans, "Extra DNS names and IP addresses for the Kubernetes API server and Talos API certificates.")
		an.Describe(&a.ConfigPatches, "Patches applied in order. Strategic merge patches are YAML (one or more documents, "+
			"including extra documents such as `HostnameConfig`, `Layer2VIPConfig`, `LinkConfig`). JSON6902 patches "+
			"(a list of `op`/`path`/`value`) only work on single-document configurations, so not with Talos 1.12, "+
			"whose configurations always have several documents. With Talos 1.12 set the hostname with a "+
			"`HostnameConfig` document (`auto: off`), not `machine.network.hostname`.")
		an.Describe(&a.ValidationMode, "Runtime mode to validate for: `metal` (default; the node installs itself from an ISO, "+
			"so an install disk is required) or `cloud` (the node boots a ready disk image).")
		an.SetDefault(&a.ValidationMode, "metal")
	})
}

// Annotate describes the outputs.
func (r *GetMachineConfigurationResult) Annotate(a infer.Annotator) {
	framework.Annotate(a, r, func() {
		a.Describe(&r.MachineConfiguration, "The machine configuration (YAML, several documents with Talos 1.12). Secret: it holds keys and tokens.")
		a.Describe(&r.KubernetesVersion, "The Kubernetes version used (default resolved), without a leading v.")
		a.Describe(&r.TalosVersion, "The Talos version the configuration was generated for, for example `v1.12.5`.")
		a.Describe(&r.Warnings, "Talos's validation warnings.")
	})
}

// Invoke generates and validates the configuration.
func (f *GetMachineConfiguration) Invoke(ctx context.Context, req infer.FunctionRequest[GetMachineConfigurationArgs]) (infer.FunctionResponse[GetMachineConfigurationResult], error) {
	in := req.Input
	bundle, err := talosconfig.UnmarshalSecrets(in.MachineSecrets)
	if err != nil {
		return infer.FunctionResponse[GetMachineConfigurationResult]{}, fmt.Errorf("machineSecrets: %w", err)
	}
	mode := talosconfig.Metal
	if in.ValidationMode != nil && *in.ValidationMode == "cloud" {
		mode = talosconfig.Cloud
	}
	res, err := talosconfig.Generate(talosconfig.Input{
		ClusterName:       in.ClusterName,
		Endpoint:          in.ClusterEndpoint,
		Role:              talosconfig.Role(in.MachineType),
		Secrets:           bundle,
		TalosVersion:      in.TalosVersion,
		ContractVersion:   in.VersionContract,
		KubernetesVersion: in.KubernetesVersion,
		InstallDisk:       in.InstallDisk,
		InstallImage:      in.InstallImage,
		SANs:              in.AdditionalSans,
		Patches:           in.ConfigPatches,
		Mode:              mode,
	})
	if err != nil {
		return infer.FunctionResponse[GetMachineConfigurationResult]{}, fmt.Errorf("getMachineConfiguration for cluster %q: %w", in.ClusterName, err)
	}
	v, _ := talosconfig.CheckTalosVersion(in.TalosVersion) //nolint:errcheck // Generate checked it
	warnings := res.Warnings
	if warnings == nil {
		warnings = []string{}
	}
	return infer.FunctionResponse[GetMachineConfigurationResult]{Output: GetMachineConfigurationResult{
		MachineConfiguration: res.Config,
		KubernetesVersion:    res.KubernetesVersion,
		TalosVersion:         talosconfig.TalosTag(v),
		Warnings:             warnings,
	}}, nil
}
