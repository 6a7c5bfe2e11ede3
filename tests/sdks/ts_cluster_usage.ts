// Type-checked with `tsc --strict` (make nodejs-sdk-check): a TalosCluster as users write it.
// The inputs it is planned from are plain values, nested ones included (the cluster is planned from
// them when it is constructed); those that only reach the machine configurations (the Proxmox CCM
// token secret, patches, registry mirror endpoints and credentials) may be Outputs or secrets.
import * as pulumi from "@pulumi/pulumi";
import * as proxmoxtalos from "@proxmoxtalos/proxmoxtalos";

export function cluster(tokenSecret: pulumi.Output<string>, mirror: pulumi.Output<string>): proxmoxtalos.TalosCluster {
    return new proxmoxtalos.TalosCluster("homelab", {
        clusterName: "homelab",
        hosts: [{ node: "pve1" }, { node: "pve2" }, { node: "pve3" }],
        network: {
            subnet: "192.168.1.0/24",
            gateway: "192.168.1.1",
            addressRange: { start: "192.168.1.21", end: "192.168.1.60" },
            secondary: { bridge: "vmbr1", subnet: "10.10.0.0/24", addressRange: { start: "10.10.0.21", end: "10.10.0.60" } },
        },
        vip: "192.168.1.20",
        controlPlane: { count: 3, size: { cores: 2, memory: 4096 } },
        workerPools: [{
            name: "workers", count: 2,
            dataDisks: [{ size: 50, volume: "data" }],
            taints: [{ key: "dedicated", value: "db", effect: proxmoxtalos.TaintEffect.NoSchedule }],
        }],
        cloudControllerManager: {
            proxmox: { url: "https://pve.example.com:8006/api2/json", tokenId: "kubernetes@pve!ccm", tokenSecret },
        },
        registryMirrors: {
            "docker.io": { endpoints: [mirror], auth: { username: "puller", password: pulumi.secret("s3cret") } },
        },
        patches: [pulumi.interpolate`machine: { env: { MIRROR: "${mirror}" } }`],
    });
}
