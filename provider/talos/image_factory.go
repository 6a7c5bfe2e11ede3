package talos

import (
	"context"
	"fmt"

	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"

	"github.com/proxmoxtalos/proxmoxtalos/provider/docs"
	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// GetImageFactory computes an Image Factory schematic and its artifact URLs.
type GetImageFactory struct{}

// GetImageFactoryArgs are the inputs.
type GetImageFactoryArgs struct {
	TalosVersion      string        `pulumi:"talosVersion,optional"`
	Extensions        []string      `pulumi:"extensions,optional"`
	KernelArgs        []string      `pulumi:"kernelArgs,optional"`
	Platform          string        `pulumi:"platform,optional"`
	Architecture      *Architecture `pulumi:"architecture,optional"`
	FactoryUrl        string        `pulumi:"factoryUrl,optional"` //nolint:revive // Pulumi name
	InstallerRegistry string        `pulumi:"installerRegistry,optional"`
}

// GetImageFactoryResult are the outputs.
type GetImageFactoryResult struct {
	SchematicId       string `pulumi:"schematicId"` //nolint:revive // Pulumi name
	Schematic         string `pulumi:"schematic"`
	TalosVersion      string `pulumi:"talosVersion"`
	IsoUrl            string `pulumi:"isoUrl"`            //nolint:revive // Pulumi name
	DiskImageUrl      string `pulumi:"diskImageUrl"`      //nolint:revive // Pulumi name
	DiskImageQcow2Url string `pulumi:"diskImageQcow2Url"` //nolint:revive // Pulumi name
	InstallerImage    string `pulumi:"installerImage"`
}

// Annotate describes the function.
func (f *GetImageFactory) Annotate(a infer.Annotator) {
	a.Describe(f, docs.Description("proxmoxtalos:talos:getImageFactory"))
}

// Annotate describes the inputs.
func (a *GetImageFactoryArgs) Annotate(an infer.Annotator) {
	framework.Annotate(an, a, func() {
		an.Describe(&a.TalosVersion, "Talos version, for example `v1.14.1`. Default: the newest release this provider knows.")
		an.SetDefault(&a.TalosVersion, talosconfig.DefaultTalosVersion)
		an.Describe(&a.Extensions, "Official system extensions, for example `siderolabs/qemu-guest-agent` (needed for the "+
			"Proxmox guest agent to answer). Order changes the schematic ID. Default: none.")
		an.Describe(&a.KernelArgs, "Extra kernel arguments baked into the images, for example `console=ttyS0`. Default: none.")
		an.Describe(&a.Platform, "Talos platform: `nocloud` reads addresses from Proxmox cloud-init.")
		an.SetDefault(&a.Platform, "nocloud")
		an.Describe(&a.Architecture, "CPU architecture of the images.")
		an.SetDefault(&a.Architecture, ArchitectureAmd64)
		an.Describe(&a.FactoryUrl, "Base URL of the Image Factory or of a mirror of it, for air-gapped sites.")
		an.SetDefault(&a.FactoryUrl, talosconfig.DefaultFactoryURL)
		an.Describe(&a.InstallerRegistry, "Registry (`host[:port][/path]`, no scheme) serving installer images, for "+
			"air-gapped sites. Default: the factory URL's host and path (the Image Factory is also a registry).")
	})
}

// Annotate describes the outputs.
func (r *GetImageFactoryResult) Annotate(a infer.Annotator) {
	framework.Annotate(a, r, func() {
		a.Describe(&r.SchematicId, "The schematic ID (64 hex characters).")
		a.Describe(&r.Schematic, "The schematic YAML, the body to POST to `<factoryUrl>/schematics`.")
		a.Describe(&r.TalosVersion, "The Talos version as tagged, for example `v1.12.5`.")
		a.Describe(&r.IsoUrl, "URL of the ISO to boot VMs from (`.../<platform>-<arch>.iso`).")
		a.Describe(&r.DiskImageUrl, "URL of the raw disk image, xz-compressed (`.../<platform>-<arch>.raw.xz`).")
		a.Describe(&r.DiskImageQcow2Url, "URL of the disk image in qcow2 format (`.../<platform>-<arch>.qcow2`).")
		a.Describe(&r.InstallerImage, "Installer image for `machine.install.image` and Talos upgrades "+
			"(`<registry>/<platform>-installer/<schematic>:<version>`).")
	})
}

// Invoke computes the schematic and URLs.
func (f *GetImageFactory) Invoke(ctx context.Context, req infer.FunctionRequest[GetImageFactoryArgs]) (infer.FunctionResponse[GetImageFactoryResult], error) {
	in := req.Input
	s := talosconfig.Schematic{Extensions: in.Extensions, KernelArgs: in.KernelArgs}
	body, err := s.YAML()
	if err != nil {
		return infer.FunctionResponse[GetImageFactoryResult]{}, fmt.Errorf("getImageFactory: %w", err)
	}
	id, err := s.ID()
	if err != nil {
		return infer.FunctionResponse[GetImageFactoryResult]{}, fmt.Errorf("getImageFactory: %w", err)
	}
	urls, err := talosconfig.FactoryURLs(id, in.TalosVersion, talosconfig.FactoryOptions{
		BaseURL: in.FactoryUrl, InstallerRegistry: in.InstallerRegistry, Platform: in.Platform, Arch: archOrDefault(in.Architecture),
	})
	if err != nil {
		return infer.FunctionResponse[GetImageFactoryResult]{}, fmt.Errorf("getImageFactory: %w", err)
	}
	v, _ := talosconfig.ParseVersion(in.TalosVersion) //nolint:errcheck // FactoryURLs checked it
	return infer.FunctionResponse[GetImageFactoryResult]{Output: GetImageFactoryResult{
		SchematicId:       id,
		Schematic:         string(body),
		TalosVersion:      talosconfig.TalosTag(v),
		IsoUrl:            urls.ISO,
		DiskImageUrl:      urls.DiskRawXZ,
		DiskImageQcow2Url: urls.DiskQCOW2,
		InstallerImage:    urls.Installer,
	}}, nil
}
