// A Talos Kubernetes cluster on Proxmox VE with the TalosCluster component: three control
// planes behind a VIP, a worker pool and the Talos cloud controller manager.
import * as pulumi from "@pulumi/pulumi";
import * as proxmoxtalos from "@proxmoxtalos/proxmoxtalos";

/** Reads the stack configuration (see README.md), declares the cluster and returns the outputs. */
export async function talosCluster(): Promise<Record<string, pulumi.Output<unknown>>> {
    const config = new pulumi.Config();
    const diskStorage = config.get("diskStorage") ?? "local-lvm";
    const size = { cores: 2, memory: 4096, diskSize: 20 };

    const cluster = new proxmoxtalos.TalosCluster("cluster", {
        clusterName: config.get("clusterName") ?? "talos",
        talosVersion: config.get("talosVersion"),
        kubernetesVersion: config.get("kubernetesVersion"),
        hosts: config.requireObject<string[]>("hosts").map((node) => ({ node, diskStorage })),
        image: {
            isoStorage: config.get("isoStorage") ?? "local",
            // An Image Factory mirror (air-gapped sites, the lab); default factory.talos.dev.
            factoryUrl: config.get("imageFactoryUrl"),
        },
        network: {
            bridge: config.get("bridge") ?? "vmbr0",
            subnet: config.require("subnet"),
            gateway: config.require("gateway"),
            dnsServers: config.getObject<string[]>("dnsServers"),
            addressRange: {
                start: config.require("addressRangeStart"),
                end: config.require("addressRangeEnd"),
            },
        },
        // The Kubernetes API answers on the VIP once etcd runs; the endpoint defaults to it.
        vip: config.require("vip"),
        controlPlane: { count: 3, size },
        workerPools: [{ name: "workers", count: config.getNumber("workerCount") ?? 1, size }],
        // The Talos CCM (nodes get spec.providerID) and the kubelet serving certificate
        // approver; on by default, spelled out here.
        cloudControllerManager: { enabled: true },
    });

    return {
        kubeconfig: pulumi.secret(cluster.kubeconfig),
        talosconfig: pulumi.secret(cluster.talosconfig),
        endpoint: cluster.endpoint,
        nodes: cluster.nodes,
        summary: cluster.summary,
    };
}
