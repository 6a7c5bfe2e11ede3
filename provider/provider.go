// Package provider assembles the proxmoxtalos Pulumi provider: it registers the
// resources, functions and the component of each module and the provider
// configuration. The behaviour lives in the packages it imports.
package provider

import (
	"context"
	"os"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	comProvider "github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
	rpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	"github.com/proxmoxtalos/proxmoxtalos/provider/cluster"
	"github.com/proxmoxtalos/proxmoxtalos/provider/config"
	"github.com/proxmoxtalos/proxmoxtalos/provider/enginewatch"
	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
	"github.com/proxmoxtalos/proxmoxtalos/provider/proxmox"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talos"
)

// Name is the Pulumi package name.
const Name = "proxmoxtalos"

// PluginDownloadURL is where the engine downloads the provider plugin from when a program
// needs it: the GitHub releases of this repository (tag v<version>, assets named
// pulumi-resource-proxmoxtalos-v<version>-<os>-<arch>.tar.gz, as make dist builds them). The
// repository part is needed: without it the engine looks in "pulumi-proxmoxtalos".
const PluginDownloadURL = "github://api.github.com/proxmoxtalos/proxmoxtalos"

// moduleMap names the Pulumi module of each Go package whose name is not the module's.
var moduleMap = map[tokens.ModuleName]tokens.ModuleName{"cluster": "index"}

// New builds the provider.
func New() (p.Provider, error) {
	prov, err := infer.NewProviderBuilder().
		WithDisplayName("Proxmox Talos").
		WithDescription("Talos Linux Kubernetes clusters on Proxmox VE, from the first `pulumi up` to every day-two change.").
		WithKeywords("proxmox", "talos", "kubernetes", "category/infrastructure", "kind/native").
		WithHomepage("https://github.com/proxmoxtalos/proxmoxtalos").
		WithRepository("https://github.com/proxmoxtalos/proxmoxtalos").
		WithPublisher("proxmoxtalos").
		WithLicense("Apache-2.0").
		WithPluginDownloadURL(PluginDownloadURL).
		WithNamespace("proxmoxtalos").
		WithLanguageMap(languageMap()).
		WithConfig(infer.Config(&config.Config{})).
		// proxmox: VMs and files on Proxmox VE (pve)
		// (framework.Resource: a resource with a Diff of its own, whose Diff
		// requests skip the schema infer builds for nothing)
		WithResources(
			framework.Resource(&proxmox.VirtualMachine{}),
			infer.Resource(&proxmox.DownloadFile{}),
		).
		// talos: secrets and offline functions (talosconfig)
		WithResources(framework.Resource(&talos.MachineSecrets{})).
		// talos: Image Factory schematic registration (imagefactory)
		WithResources(infer.Resource(&talos.ImageFactorySchematic{})).
		// talos: node-facing resources (talosapi)
		WithResources(
			framework.Resource(&talos.ConfigurationApply{}),
			infer.Resource(&talos.Bootstrap{}),
			framework.Resource(&talos.Kubeconfig{}),
			infer.Resource(&talos.ClusterHealth{}),
			infer.Resource(&talos.ControlPlaneComponents{}),
		).
		WithFunctions(
			infer.Function(&talos.GetMachineConfiguration{}),
			infer.Function(&talos.GetClientConfiguration{}),
			infer.Function(&talos.GetImageFactory{}),
		).
		// index: the TalosCluster component (plan + fan-out)
		WithComponents(cluster.New()).
		WithModuleMap(moduleMap).
		Build()
	if err != nil {
		return p.Provider{}, err
	}
	return withWorkarounds(prov), nil
}

// withWorkarounds adds what infer v1.5.0 lacks, in one pass
// (framework.Apply; package framework says why each is needed and what
// upstream behaviour it works around). The specifics come from the
// packages that own them.
func withWorkarounds(prov p.Provider) p.Provider {
	prov = framework.Apply(prov, framework.Workarounds{
		ConfigDiff:      config.Diff,
		SchemaFixes:     []framework.SchemaFix{cluster.PlainInputs(), talos.PreviewOutputs(), framework.DescribeEnums(moduleMap, describedEnums...), addExamples},
		ConstructGuards: []framework.ConstructGuard{cluster.ConstructGuard()},
		PreviewUnknowns: []framework.PreviewUnknowns{talos.RenewalPreview(time.Now)},
		InputsOnly:      talos.StateCopies(),
		PreviewEchoes:   framework.PreviewEchoes{Full: config.FullPreviewOutputs},
	})
	return config.WithOfflineGuard(prov) // offline previews change nothing (config/offline.go)
}

// Run serves the provider over gRPC to the Pulumi engine.
func Run(ctx context.Context, version string) error {
	prov, err := New()
	if err != nil {
		return err
	}
	if addr := enginewatch.EngineAddress(os.Args); addr != "" {
		go enginewatch.Watch(ctx, addr, enginewatch.Options{})
	}
	return comProvider.MainContext(ctx, Name, func(host *comProvider.HostClient) (rpc.ResourceProviderServer, error) {
		srv, err := p.RawServer(Name, version, prov)(host)
		if err != nil {
			return nil, err
		}
		return framework.WithProviderInstance(srv), nil
	})
}
