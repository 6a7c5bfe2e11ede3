import pulumi
import pulumi_proxmoxtalos as proxmoxtalos

cluster = proxmoxtalos.TalosCluster(
    "cluster",
    cluster_name="homelab",
    hosts=[
        proxmoxtalos.HostArgs(node="pve1"),
        proxmoxtalos.HostArgs(node="pve2"),
        proxmoxtalos.HostArgs(node="pve3"),
    ],
    network=proxmoxtalos.NetworkArgs(
        subnet="192.168.1.0/24",
        gateway="192.168.1.1",
        address_range=proxmoxtalos.AddressRangeArgs(start="192.168.1.21", end="192.168.1.60"),
        dns_servers=["192.168.1.1"],
    ),
    vip="192.168.1.20",
    control_plane=proxmoxtalos.ControlPlaneArgs(count=3),
    worker_pools=[
        proxmoxtalos.WorkerPoolArgs(
            name="workers",
            count=2,
            size=proxmoxtalos.VmSizeArgs(cores=4, memory=8192),
        )
    ],
)

pulumi.export("kubeconfig", cluster.kubeconfig)
pulumi.export("summary", cluster.summary)
