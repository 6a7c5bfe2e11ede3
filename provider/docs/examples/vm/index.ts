import * as proxmoxtalos from "@proxmoxtalos/proxmoxtalos";

// The nocloud image with the guest agent: Talos reads its address from the cloud-init drive.
const schematic = new proxmoxtalos.talos.ImageFactorySchematic("schematic", {
    talosVersion: "v1.12.5",
    platform: "nocloud",
    extensions: ["siderolabs/qemu-guest-agent"],
});

const iso = new proxmoxtalos.proxmox.DownloadFile("iso", {
    node: "pve1",
    storage: "local",
    content: "iso",
    url: schematic.isoUrl,
    fileName: "talos-v1.12.5-nocloud-amd64.iso",
});

const vm = new proxmoxtalos.proxmox.VirtualMachine("vm", {
    node: "pve1",
    name: "talos-1",
    iso: iso.volumeId,
    osType: "l26",
    cpu: { cores: 2 },
    memory: { dedicated: 4096 },
    disks: [{ interface: "scsi0", storage: "local-lvm", size: 20 }],
    networkDevices: [{ bridge: "vmbr0" }],
    cloudInit: {
        storage: "local-lvm",
        ipConfigs: [{ ipv4: { address: "192.168.1.21/24", gateway: "192.168.1.1" } }],
    },
    agent: { enabled: true },
});

export const vmId = vm.vmId;
export const macAddress = vm.macAddresses[0];
