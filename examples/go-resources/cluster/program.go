// Package cluster builds a Talos Kubernetes cluster on Proxmox VE from the low-level
// proxmoxtalos resources: the Image Factory ISO on each host, one VM per node, the
// machine secrets and configurations, the applies, the etcd bootstrap, the kubeconfig
// and a health gate. The project's main.go runs Program; tests run it inline.
package cluster

import (
	"fmt"
	"strconv"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/sdk/go/proxmoxtalos/proxmox"
	"github.com/proxmoxtalos/proxmoxtalos/sdk/go/proxmoxtalos/talos"
)

// VM size of every node. Talos needs 2 cores and 2 GiB at least; a control plane
// running etcd and the API server is comfortable with 4 GiB.
const (
	cores     = 2
	memoryMiB = 4096
	diskGiB   = 20
)

// The OS disk is scsi0 on a virtio-scsi controller, so Talos sees it as /dev/sda.
const (
	diskInterface = "scsi0"
	installDisk   = "/dev/sda"
)

// Program declares the cluster. It exports kubeconfig and talosconfig (secrets), the
// Kubernetes endpoint, the nodes, and the providerID each Kubernetes node got.
func Program(ctx *pulumi.Context) error {
	s, err := LoadSettings(ctx)
	if err != nil {
		return err
	}
	nodes := s.Nodes()

	// The Image Factory schematic with the QEMU guest agent extension; computed offline.
	image, err := talos.GetImageFactory(ctx, &talos.GetImageFactoryArgs{
		TalosVersion: pulumi.StringRef(s.TalosVersion),
		Platform:     pulumi.StringRef("nocloud"), // addresses come from the Proxmox cloud-init drive
		Extensions:   []string{"siderolabs/qemu-guest-agent"},
	})
	if err != nil {
		return err
	}

	// Proxmox downloads the ISO onto each host that runs a node.
	isos := map[string]*proxmox.DownloadFile{}
	for _, n := range nodes {
		if isos[n.Host] != nil {
			continue
		}
		iso, err := proxmox.NewDownloadFile(ctx, "talos-iso-"+n.Host, &proxmox.DownloadFileArgs{
			Node:     pulumi.String(n.Host),
			Storage:  pulumi.String(s.ISOStorage),
			Url:      pulumi.String(image.IsoUrl),
			Content:  proxmox.DownloadContentIso,
			FileName: pulumi.String(fmt.Sprintf("talos-%s-%s-nocloud-amd64.iso", image.SchematicId[:12], s.TalosVersion)),
		})
		if err != nil {
			return err
		}
		isos[n.Host] = iso
	}

	secrets, err := talos.NewMachineSecrets(ctx, "secrets", &talos.MachineSecretsArgs{
		TalosVersion: pulumi.String(s.TalosVersion),
	})
	if err != nil {
		return err
	}

	var (
		applies                 []pulumi.Resource
		cpAddrs, workerAddrs    pulumi.StringArray
		digests                 pulumi.StringArray
		nodeOutputs             pulumi.MapArray
		firstControlPlane       = nodes[0].Address.String()
		firstControlPlaneApply  pulumi.Resource
		kubernetesVersionOrNone *string
	)
	if s.KubernetesVersion != "" {
		kubernetesVersionOrNone = &s.KubernetesVersion
	}
	for _, n := range nodes {
		vm, err := newVM(ctx, s, n, isos[n.Host])
		if err != nil {
			return err
		}

		patches := pulumi.StringArray{pulumi.String(cloudProviderPatch()), pulumi.String(hostnamePatch(n.Name))}
		machineType := talos.MachineTypeWorker
		if n.Role == ControlPlane {
			machineType = talos.MachineTypeControlPlane
			vip := vm.MacAddresses.Index(pulumi.Int(0)).ApplyT(func(mac string) string {
				return vipPatch(s.VIP.String(), mac)
			}).(pulumi.StringOutput)
			patches = append(patches, pulumi.String(controlPlanePatch()), vip)
		}
		config := talos.GetMachineConfigurationOutput(ctx, talos.GetMachineConfigurationOutputArgs{
			ClusterName:       pulumi.String(s.ClusterName),
			ClusterEndpoint:   pulumi.String(s.ClusterEndpoint()),
			MachineType:       machineType,
			MachineSecrets:    secrets.MachineSecrets,
			TalosVersion:      pulumi.String(s.TalosVersion),
			KubernetesVersion: pulumi.StringPtrFromPtr(kubernetesVersionOrNone),
			InstallDisk:       pulumi.String(installDisk),
			InstallImage:      pulumi.String(image.InstallerImage),
			AdditionalSans:    pulumi.StringArray{pulumi.String(s.VIP.String())},
			ConfigPatches:     patches,
		}).MachineConfiguration()

		// A fresh VM boots the ISO into maintenance mode; the apply installs Talos to
		// /dev/sda, reboots it and waits until the node runs the configuration.
		apply, err := talos.NewConfigurationApply(ctx, n.Name, &talos.ConfigurationApplyArgs{
			Node:                 pulumi.String(n.Address.String()),
			ClientConfiguration:  secrets.ClientConfiguration,
			MachineConfiguration: config,
		}, pulumi.DependsOn([]pulumi.Resource{vm}))
		if err != nil {
			return err
		}
		applies = append(applies, apply)
		digests = append(digests, apply.ConfigDigest)
		if n.Role == ControlPlane {
			cpAddrs = append(cpAddrs, pulumi.String(n.Address.String()))
			if firstControlPlaneApply == nil {
				firstControlPlaneApply = apply
			}
		} else {
			workerAddrs = append(workerAddrs, pulumi.String(n.Address.String()))
		}
		nodeOutputs = append(nodeOutputs, pulumi.Map{
			"name":        pulumi.String(n.Name),
			"role":        pulumi.String(string(n.Role)),
			"proxmoxNode": pulumi.String(n.Host),
			"address":     pulumi.String(n.Address.String()),
			"vmId":        vm.VmId,
			"macAddress":  vm.MacAddresses.Index(pulumi.Int(0)),
		})
	}

	// etcd is bootstrapped once, on the first control plane's own address (the VIP only
	// exists once etcd runs).
	bootstrap, err := talos.NewBootstrap(ctx, "bootstrap", &talos.BootstrapArgs{
		Node:                pulumi.String(firstControlPlane),
		ClientConfiguration: secrets.ClientConfiguration,
	}, pulumi.DependsOn([]pulumi.Resource{firstControlPlaneApply}))
	if err != nil {
		return err
	}

	kubeconfig, err := talos.NewKubeconfig(ctx, "kubeconfig", &talos.KubeconfigArgs{
		Node:                pulumi.String(firstControlPlane),
		ClientConfiguration: secrets.ClientConfiguration,
		KubernetesEndpoint:  pulumi.String(s.ClusterEndpoint()),
	}, pulumi.DependsOn([]pulumi.Resource{bootstrap}))
	if err != nil {
		return err
	}

	// The stack is done when every node is Ready behind the VIP; the triggers check
	// again whenever a node's configuration changes.
	health, err := talos.NewClusterHealth(ctx, "health", &talos.ClusterHealthArgs{
		ControlPlanes:       cpAddrs,
		Workers:             workerAddrs,
		ClientConfiguration: secrets.ClientConfiguration,
		Kubeconfig:          kubeconfig.Kubeconfig,
		Triggers:            digests,
	}, pulumi.DependsOn(append(applies, bootstrap)))
	if err != nil {
		return err
	}

	talosconfig := talos.GetClientConfigurationOutput(ctx, talos.GetClientConfigurationOutputArgs{
		ClusterName:         pulumi.String(s.ClusterName),
		ClientConfiguration: secrets.ClientConfiguration,
		// Default node: the first endpoint, so talosctl kubeconfig and
		// etcd commands work without -n.
		Endpoints: cpAddrs,
	})

	ctx.Export("kubeconfig", pulumi.ToSecret(kubeconfig.Kubeconfig))
	ctx.Export("talosconfig", pulumi.ToSecret(talosconfig.TalosConfig()))
	ctx.Export("endpoint", pulumi.String(s.ClusterEndpoint()))
	ctx.Export("nodes", nodeOutputs)
	ctx.Export("kubernetesNodes", health.Nodes)
	return nil
}

// newVM creates a node's VM: it boots the Talos ISO with a static address from the
// Proxmox cloud-init drive (the nocloud platform reads it) and an empty OS disk.
func newVM(ctx *pulumi.Context, s *Settings, n Node, iso *proxmox.DownloadFile) (*proxmox.VirtualMachine, error) {
	return proxmox.NewVirtualMachine(ctx, n.Name, &proxmox.VirtualMachineArgs{
		Node:         pulumi.String(n.Host),
		Name:         pulumi.String(n.Name),
		Tags:         pulumi.StringArray{pulumi.String("talos"), pulumi.String(s.ClusterName), pulumi.String(string(n.Role))},
		Iso:          iso.VolumeId,
		OsType:       proxmox.OsTypeL26,
		Cpu:          &proxmox.VirtualMachineCpuArgs{Cores: pulumi.Int(cores), Type: pulumi.String("host")},
		Memory:       &proxmox.VirtualMachineMemoryArgs{Dedicated: pulumi.Int(memoryMiB)},
		ScsiHardware: proxmox.ScsiHardwareVirtioScsiSingle,
		Disks: proxmox.VirtualMachineDiskArray{&proxmox.VirtualMachineDiskArgs{
			Interface: pulumi.String(diskInterface),
			Storage:   pulumi.String(s.DiskStorage),
			Size:      pulumi.Int(diskGiB),
			Ssd:       pulumi.Bool(true),
			Discard:   pulumi.Bool(true),
			Iothread:  pulumi.Bool(true),
		}},
		NetworkDevices: proxmox.VirtualMachineNetworkDeviceArray{&proxmox.VirtualMachineNetworkDeviceArgs{
			Bridge: pulumi.String(s.Bridge),
		}},
		CloudInit: &proxmox.VirtualMachineCloudInitArgs{
			Storage: pulumi.String(s.DiskStorage),
			IpConfigs: proxmox.VirtualMachineIpConfigArray{&proxmox.VirtualMachineIpConfigArgs{
				Ipv4: &proxmox.VirtualMachineIpAddressArgs{
					Address: pulumi.String(n.Address.String() + "/" + strconv.Itoa(s.Subnet.Bits())),
					Gateway: pulumi.String(s.Gateway.String()),
				},
			}},
			Dns: &proxmox.VirtualMachineDnsArgs{Servers: pulumi.ToStringArray(s.DNSServers)},
		},
		// The agent reports addresses to Proxmox and handles shutdowns. The addresses are
		// known from cloud-init, so the VM does not wait for the agent to report them.
		Agent: &proxmox.VirtualMachineAgentArgs{Enabled: pulumi.Bool(true), WaitForAddress: pulumi.Bool(false)},
	})
}
