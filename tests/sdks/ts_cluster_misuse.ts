// Must FAIL `tsc --strict` (make nodejs-sdk-check): the same cluster as ts_cluster_usage.ts with
// one Output in a nested input (network.subnet). The component plans the cluster from its inputs
// when it is constructed, so they must be plain values; the SDK's types have to say so.
import * as pulumi from "@pulumi/pulumi";
import * as proxmoxtalos from "@proxmoxtalos/proxmoxtalos";

export function cluster(subnet: pulumi.Output<string>): proxmoxtalos.TalosCluster {
    return new proxmoxtalos.TalosCluster("homelab", {
        clusterName: "homelab",
        hosts: [{ node: "pve1" }],
        network: { subnet },
    });
}
