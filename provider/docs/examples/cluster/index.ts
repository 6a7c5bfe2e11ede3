import * as proxmoxtalos from "@proxmoxtalos/proxmoxtalos";

const cluster = new proxmoxtalos.TalosCluster("cluster", {
    clusterName: "homelab",
    hosts: [{ node: "pve1" }, { node: "pve2" }, { node: "pve3" }],
    network: {
        subnet: "192.168.1.0/24",
        gateway: "192.168.1.1",
        addressRange: { start: "192.168.1.21", end: "192.168.1.60" },
        dnsServers: ["192.168.1.1"],
    },
    vip: "192.168.1.20",
    controlPlane: { count: 3 },
    workerPools: [{ name: "workers", count: 2, size: { cores: 4, memory: 8192 } }],
});

export const kubeconfig = cluster.kubeconfig;
export const summary = cluster.summary;
