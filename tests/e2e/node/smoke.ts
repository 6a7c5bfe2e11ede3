// A small program over the Node.js SDK's low-level resources, run by
// examples_typescript_test.go through runner.ts: a resource with secret outputs, offline
// invokes, an enum, and a resource on the lab's Proxmox API. It proves the TypeScript
// plumbing (SDK build, Automation API, plugin path, provider config) independently of the
// example's cluster.
import * as pulumi from "@pulumi/pulumi";
import * as proxmoxtalos from "@proxmoxtalos/proxmoxtalos";

export async function smoke(): Promise<Record<string, pulumi.Output<unknown> | unknown>> {
    const config = new pulumi.Config();
    const talosVersion = config.get("talosVersion") ?? "v1.12.5";

    const image = await proxmoxtalos.talos.getImageFactory({
        talosVersion,
        platform: "nocloud",
        extensions: ["siderolabs/qemu-guest-agent"],
    });
    const iso = new proxmoxtalos.proxmox.DownloadFile("talos-iso", {
        node: config.require("host"),
        storage: "local",
        url: image.isoUrl,
        content: proxmoxtalos.types.enums.proxmox.DownloadContent.Iso,
        fileName: `talos-${talosVersion}-nocloud-amd64.iso`,
    });
    const secrets = new proxmoxtalos.talos.MachineSecrets("secrets", { talosVersion });
    const talosconfig = proxmoxtalos.talos.getClientConfigurationOutput({
        clusterName: "smoke",
        clientConfiguration: secrets.clientConfiguration,
        endpoints: ["192.0.2.10"],
    });

    return {
        schematicId: image.schematicId,
        installerImage: image.installerImage,
        volumeId: iso.volumeId,
        machineSecrets: secrets.machineSecrets,
        talosconfig: talosconfig.talosConfig,
    };
}
