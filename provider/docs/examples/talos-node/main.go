//go:build ignore

package main

import (
	"github.com/proxmoxtalos/proxmoxtalos/sdk/go/proxmoxtalos/talos"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// One Talos node (a VM in maintenance mode at 192.168.1.21) made a control plane that also
// runs workloads, bootstrapped, and checked healthy.
func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		node := pulumi.String("192.168.1.21")
		talosVersion := "v1.12.5"

		secrets, err := talos.NewMachineSecrets(ctx, "secrets", &talos.MachineSecretsArgs{
			TalosVersion: pulumi.String(talosVersion),
		})
		if err != nil {
			return err
		}
		image := talos.GetImageFactoryOutput(ctx, talos.GetImageFactoryOutputArgs{
			TalosVersion: pulumi.String(talosVersion),
			Platform:     pulumi.String("nocloud"),
			Extensions:   pulumi.StringArray{pulumi.String("siderolabs/qemu-guest-agent")},
		})
		config := talos.GetMachineConfigurationOutput(ctx, talos.GetMachineConfigurationOutputArgs{
			ClusterName:     pulumi.String("single"),
			ClusterEndpoint: pulumi.String("https://192.168.1.21:6443"),
			MachineType:     talos.MachineTypeControlPlane,
			MachineSecrets:  secrets.MachineSecrets,
			TalosVersion:    pulumi.String(talosVersion),
			InstallImage:    image.InstallerImage(),
			ConfigPatches:   pulumi.StringArray{pulumi.String("cluster: { allowSchedulingOnControlPlanes: true }")},
		})

		apply, err := talos.NewConfigurationApply(ctx, "apply", &talos.ConfigurationApplyArgs{
			Node:                 node,
			ClientConfiguration:  secrets.ClientConfiguration,
			MachineConfiguration: config.MachineConfiguration(),
		})
		if err != nil {
			return err
		}
		bootstrap, err := talos.NewBootstrap(ctx, "bootstrap", &talos.BootstrapArgs{
			Node:                node,
			ClientConfiguration: secrets.ClientConfiguration,
		}, pulumi.DependsOn([]pulumi.Resource{apply}))
		if err != nil {
			return err
		}
		kubeconfig, err := talos.NewKubeconfig(ctx, "kubeconfig", &talos.KubeconfigArgs{
			Node:                node,
			ClientConfiguration: secrets.ClientConfiguration,
		}, pulumi.DependsOn([]pulumi.Resource{bootstrap}))
		if err != nil {
			return err
		}
		health, err := talos.NewClusterHealth(ctx, "health", &talos.ClusterHealthArgs{
			ControlPlanes:       pulumi.StringArray{node},
			ClientConfiguration: secrets.ClientConfiguration,
			Kubeconfig:          kubeconfig.Kubeconfig,
		}, pulumi.DependsOn([]pulumi.Resource{bootstrap}))
		if err != nil {
			return err
		}
		// Keeps the API server, controller manager, scheduler and kube-proxy at the version the
		// configuration names (a later change of it upgrades them).
		_, err = talos.NewControlPlaneComponents(ctx, "components", &talos.ControlPlaneComponentsArgs{
			Node:                node,
			ClientConfiguration: secrets.ClientConfiguration,
			KubernetesVersion:   config.KubernetesVersion(),
		}, pulumi.DependsOn([]pulumi.Resource{health}))
		if err != nil {
			return err
		}

		talosconfig := talos.GetClientConfigurationOutput(ctx, talos.GetClientConfigurationOutputArgs{
			ClusterName:         pulumi.String("single"),
			ClientConfiguration: secrets.ClientConfiguration,
			Endpoints:           pulumi.StringArray{node},
			Nodes:               pulumi.StringArray{node},
		})
		ctx.Export("kubeconfig", kubeconfig.Kubeconfig)
		ctx.Export("talosconfig", talosconfig.TalosConfig())
		return nil
	})
}
