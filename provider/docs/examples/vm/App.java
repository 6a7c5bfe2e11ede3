package examples.vm;

import com.proxmoxtalos.proxmoxtalos.proxmox.DownloadFile;
import com.proxmoxtalos.proxmoxtalos.proxmox.DownloadFileArgs;
import com.proxmoxtalos.proxmoxtalos.proxmox.VirtualMachine;
import com.proxmoxtalos.proxmoxtalos.proxmox.VirtualMachineArgs;
import com.proxmoxtalos.proxmoxtalos.proxmox.enums.DownloadContent;
import com.proxmoxtalos.proxmoxtalos.proxmox.enums.OsType;
import com.proxmoxtalos.proxmoxtalos.proxmox.inputs.VirtualMachineAgentArgs;
import com.proxmoxtalos.proxmoxtalos.proxmox.inputs.VirtualMachineCloudInitArgs;
import com.proxmoxtalos.proxmoxtalos.proxmox.inputs.VirtualMachineCpuArgs;
import com.proxmoxtalos.proxmoxtalos.proxmox.inputs.VirtualMachineDiskArgs;
import com.proxmoxtalos.proxmoxtalos.proxmox.inputs.VirtualMachineIpAddressArgs;
import com.proxmoxtalos.proxmoxtalos.proxmox.inputs.VirtualMachineIpConfigArgs;
import com.proxmoxtalos.proxmoxtalos.proxmox.inputs.VirtualMachineMemoryArgs;
import com.proxmoxtalos.proxmoxtalos.proxmox.inputs.VirtualMachineNetworkDeviceArgs;
import com.proxmoxtalos.proxmoxtalos.talos.ImageFactorySchematic;
import com.proxmoxtalos.proxmoxtalos.talos.ImageFactorySchematicArgs;
import com.pulumi.Context;
import com.pulumi.Pulumi;

public class App {
    public static void main(String[] args) {
        Pulumi.run(App::stack);
    }

    public static void stack(Context ctx) {
        // The nocloud image with the guest agent: Talos reads its address from the cloud-init drive.
        var schematic = new ImageFactorySchematic("schematic", ImageFactorySchematicArgs.builder()
            .talosVersion("v1.12.5")
            .platform("nocloud")
            .extensions("siderolabs/qemu-guest-agent")
            .build());

        var iso = new DownloadFile("iso", DownloadFileArgs.builder()
            .node("pve1")
            .storage("local")
            .content(DownloadContent.Iso)
            .url(schematic.isoUrl())
            .fileName("talos-v1.12.5-nocloud-amd64.iso")
            .build());

        var vm = new VirtualMachine("vm", VirtualMachineArgs.builder()
            .node("pve1")
            .name("talos-1")
            .iso(iso.volumeId())
            .osType(OsType.L26)
            .cpu(VirtualMachineCpuArgs.builder().cores(2).build())
            .memory(VirtualMachineMemoryArgs.builder().dedicated(4096).build())
            .disks(VirtualMachineDiskArgs.builder().interface_("scsi0").storage("local-lvm").size(20).build())
            .networkDevices(VirtualMachineNetworkDeviceArgs.builder().bridge("vmbr0").build())
            .cloudInit(VirtualMachineCloudInitArgs.builder()
                .storage("local-lvm")
                .ipConfigs(VirtualMachineIpConfigArgs.builder()
                    .ipv4(VirtualMachineIpAddressArgs.builder().address("192.168.1.21/24").gateway("192.168.1.1").build())
                    .build())
                .build())
            .agent(VirtualMachineAgentArgs.builder().enabled(true).build())
            .build());

        ctx.export("vmId", vm.vmId());
        ctx.export("macAddress", vm.macAddresses().applyValue(macs -> macs.get(0)));
    }
}
