"""Must FAIL mypy (make python-sdk-check): the same cluster as python_cluster_usage.py with one
Output in a nested input (network.subnet). The component plans the cluster from its inputs when
it is constructed, so they must be plain values; the SDK's hints have to say so."""

import pulumi

import pulumi_proxmoxtalos as proxmoxtalos


def cluster(subnet: pulumi.Output[str]) -> proxmoxtalos.TalosCluster:
    return proxmoxtalos.TalosCluster(
        "homelab",
        cluster_name="homelab",
        hosts=[proxmoxtalos.HostArgs(node="pve1")],
        network=proxmoxtalos.NetworkArgs(subnet=subnet),
    )
