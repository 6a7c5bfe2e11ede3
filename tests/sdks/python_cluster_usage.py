"""Type-checked by `make python-sdk-check` (mypy --strict): a TalosCluster as users write it.
The inputs it is planned from are plain values, nested ones included (the cluster is planned from
them when it is constructed); those that only reach the machine configurations (the Proxmox CCM
token secret, patches, registry mirror endpoints and credentials) may be Outputs or secrets."""

import pulumi

import pulumi_proxmoxtalos as proxmoxtalos


def cluster(token_secret: pulumi.Output[str], mirror: pulumi.Output[str]) -> proxmoxtalos.TalosCluster:
    return proxmoxtalos.TalosCluster(
        "homelab",
        cluster_name="homelab",
        hosts=[proxmoxtalos.HostArgs(node="pve1"), proxmoxtalos.HostArgs(node="pve2")],
        network=proxmoxtalos.NetworkArgs(
            subnet="192.168.1.0/24",
            gateway="192.168.1.1",
            address_range=proxmoxtalos.AddressRangeArgs(start="192.168.1.21", end="192.168.1.60"),
        ),
        vip="192.168.1.20",
        worker_pools=[
            proxmoxtalos.WorkerPoolArgs(
                name="workers", count=2, data_disks=[proxmoxtalos.DataDiskArgs(size=50, volume="data")]
            )
        ],
        cloud_controller_manager=proxmoxtalos.CloudControllerManagerArgs(
            proxmox=proxmoxtalos.ProxmoxCloudControllerManagerArgs(
                url="https://pve.example.com:8006/api2/json", token_id="kubernetes@pve!ccm", token_secret=token_secret
            )
        ),
        registry_mirrors={
            "docker.io": proxmoxtalos.RegistryMirrorArgs(
                endpoints=[mirror],
                auth=proxmoxtalos.RegistryAuthArgs(username="puller", password=pulumi.Output.secret("s3cret")),
            )
        },
        patches=[pulumi.Output.concat('machine: { env: { MIRROR: "', mirror, '" } }')],
    )
