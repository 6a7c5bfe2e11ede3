"""A Talos Kubernetes cluster on Proxmox VE with the TalosCluster component: three control
planes behind a VIP, a worker pool and the Talos cloud controller manager."""

from typing import Dict, List, Optional

import pulumi
import pulumi_proxmoxtalos as proxmoxtalos


def talos_cluster() -> None:
    """Reads the stack configuration (see README.md), declares the cluster and exports
    kubeconfig and talosconfig (secrets), the API endpoint and the nodes."""
    config = pulumi.Config()
    disk_storage = config.get("diskStorage") or "local-lvm"
    hosts: List[str] = config.require_object("hosts")
    dns_servers: Optional[List[str]] = config.get_object("dnsServers")
    size = proxmoxtalos.VmSizeArgs(cores=2, memory=4096, disk_size=20)
    # `or 1` would turn an explicit 0 (no workers) into 1.
    worker_count = config.get_int("workerCount")

    cluster = proxmoxtalos.TalosCluster(
        "cluster",
        cluster_name=config.get("clusterName") or "talos",
        talos_version=config.get("talosVersion"),
        kubernetes_version=config.get("kubernetesVersion"),
        hosts=[proxmoxtalos.HostArgs(node=node, disk_storage=disk_storage) for node in hosts],
        image=proxmoxtalos.ImageArgs(
            iso_storage=config.get("isoStorage") or "local",
            # An Image Factory mirror (air-gapped sites, the lab); default factory.talos.dev.
            factory_url=config.get("imageFactoryUrl"),
        ),
        network=proxmoxtalos.NetworkArgs(
            bridge=config.get("bridge") or "vmbr0",
            subnet=config.require("subnet"),
            gateway=config.require("gateway"),
            dns_servers=dns_servers,
            address_range=proxmoxtalos.AddressRangeArgs(
                start=config.require("addressRangeStart"),
                end=config.require("addressRangeEnd"),
            ),
        ),
        # The Kubernetes API answers on the VIP once etcd runs; the endpoint defaults to it.
        vip=config.require("vip"),
        control_plane=proxmoxtalos.ControlPlaneArgs(count=3, size=size),
        worker_pools=[
            proxmoxtalos.WorkerPoolArgs(name="workers", count=1 if worker_count is None else worker_count, size=size),
        ],
        # The Talos CCM (nodes get spec.providerID) and the kubelet serving certificate
        # approver; on by default, spelled out here.
        cloud_controller_manager=proxmoxtalos.CloudControllerManagerArgs(enabled=True),
    )

    pulumi.export("kubeconfig", pulumi.Output.secret(cluster.kubeconfig))
    pulumi.export("talosconfig", pulumi.Output.secret(cluster.talosconfig))
    pulumi.export("endpoint", cluster.endpoint)
    # Exported as is, the nodes would carry Python's snake_case keys (vm_id, mac_address):
    # the same camelCase keys as the other languages' exports instead.
    pulumi.export("nodes", cluster.nodes.apply(lambda nodes: [node_output(n) for n in nodes]))
    pulumi.export("summary", cluster.summary)


def node_output(n: proxmoxtalos.outputs.ClusterNode) -> Dict[str, object]:
    """One node as the stack exports it, with the schema's (camelCase) property names."""
    return {
        "name": n.name,
        "role": n.role,
        "pool": n.pool,
        "proxmoxNode": n.proxmox_node,
        "vmId": n.vm_id,
        "address": n.address,
        "macAddress": n.mac_address,
    }
