import pulumi
import pulumi_proxmoxtalos as proxmoxtalos

# The nocloud image with the guest agent: Talos reads its address from the cloud-init drive.
schematic = proxmoxtalos.talos.ImageFactorySchematic(
    "schematic",
    talos_version="v1.12.5",
    platform="nocloud",
    extensions=["siderolabs/qemu-guest-agent"],
)

iso = proxmoxtalos.proxmox.DownloadFile(
    "iso",
    node="pve1",
    storage="local",
    content=proxmoxtalos.proxmox.DownloadContent.ISO,
    url=schematic.iso_url,
    file_name="talos-v1.12.5-nocloud-amd64.iso",
)

vm = proxmoxtalos.proxmox.VirtualMachine(
    "vm",
    node="pve1",
    name="talos-1",
    iso=iso.volume_id,
    os_type=proxmoxtalos.proxmox.OsType.L26,
    cpu=proxmoxtalos.proxmox.VirtualMachineCpuArgs(cores=2),
    memory=proxmoxtalos.proxmox.VirtualMachineMemoryArgs(dedicated=4096),
    disks=[proxmoxtalos.proxmox.VirtualMachineDiskArgs(interface="scsi0", storage="local-lvm", size=20)],
    network_devices=[proxmoxtalos.proxmox.VirtualMachineNetworkDeviceArgs(bridge="vmbr0")],
    cloud_init=proxmoxtalos.proxmox.VirtualMachineCloudInitArgs(
        storage="local-lvm",
        ip_configs=[
            proxmoxtalos.proxmox.VirtualMachineIpConfigArgs(
                ipv4=proxmoxtalos.proxmox.VirtualMachineIpAddressArgs(
                    address="192.168.1.21/24", gateway="192.168.1.1"
                )
            )
        ],
    ),
    agent=proxmoxtalos.proxmox.VirtualMachineAgentArgs(enabled=True),
)

pulumi.export("vmId", vm.vm_id)
pulumi.export("macAddress", vm.mac_addresses[0])
