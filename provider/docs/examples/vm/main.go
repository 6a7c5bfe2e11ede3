//go:build ignore

package main

import (
	"github.com/proxmoxtalos/proxmoxtalos/sdk/go/proxmoxtalos/proxmox"
	"github.com/proxmoxtalos/proxmoxtalos/sdk/go/proxmoxtalos/talos"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		// The nocloud image with the guest agent: Talos reads its address from the cloud-init drive.
		schematic, err := talos.NewImageFactorySchematic(ctx, "schematic", &talos.ImageFactorySchematicArgs{
			TalosVersion: pulumi.String("v1.12.5"),
			Platform:     pulumi.String("nocloud"),
			Extensions:   pulumi.StringArray{pulumi.String("siderolabs/qemu-guest-agent")},
		})
		if err != nil {
			return err
		}
		iso, err := proxmox.NewDownloadFile(ctx, "iso", &proxmox.DownloadFileArgs{
			Node:     pulumi.String("pve1"),
			Storage:  pulumi.String("local"),
			Content:  proxmox.DownloadContentIso,
			Url:      schematic.IsoUrl,
			FileName: pulumi.String("talos-v1.12.5-nocloud-amd64.iso"),
		})
		if err != nil {
			return err
		}
		vm, err := proxmox.NewVirtualMachine(ctx, "vm", &proxmox.VirtualMachineArgs{
			Node:   pulumi.String("pve1"),
			Name:   pulumi.String("talos-1"),
			Iso:    iso.VolumeId,
			OsType: proxmox.OsTypeL26,
			Cpu:    &proxmox.VirtualMachineCpuArgs{Cores: pulumi.Int(2)},
			Memory: &proxmox.VirtualMachineMemoryArgs{Dedicated: pulumi.Int(4096)},
			Disks: proxmox.VirtualMachineDiskArray{&proxmox.VirtualMachineDiskArgs{
				Interface: pulumi.String("scsi0"),
				Storage:   pulumi.String("local-lvm"),
				Size:      pulumi.Int(20),
			}},
			NetworkDevices: proxmox.VirtualMachineNetworkDeviceArray{&proxmox.VirtualMachineNetworkDeviceArgs{
				Bridge: pulumi.String("vmbr0"),
			}},
			CloudInit: &proxmox.VirtualMachineCloudInitArgs{
				Storage: pulumi.String("local-lvm"),
				IpConfigs: proxmox.VirtualMachineIpConfigArray{&proxmox.VirtualMachineIpConfigArgs{
					Ipv4: &proxmox.VirtualMachineIpAddressArgs{
						Address: pulumi.String("192.168.1.21/24"),
						Gateway: pulumi.String("192.168.1.1"),
					},
				}},
			},
			Agent: &proxmox.VirtualMachineAgentArgs{Enabled: pulumi.Bool(true)},
		})
		if err != nil {
			return err
		}
		ctx.Export("vmId", vm.VmId)
		ctx.Export("macAddress", vm.MacAddresses.Index(pulumi.Int(0)))
		return nil
	})
}
