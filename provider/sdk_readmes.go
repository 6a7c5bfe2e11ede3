package provider

// The READMEs of the npm and Python packages (what npmjs.com and PyPI show): what the package
// is, how to install it and the provider plugin, and a first program. The snippets follow
// examples/typescript and examples/python, which the e2e tests run.

// readmeAbout and readmeConfig open and close both READMEs.
const readmeAbout = `Talos Linux Kubernetes clusters on Proxmox VE with Pulumi: the ` + "`TalosCluster`" + ` component builds a
highly available cluster (VMs, Talos configuration, bootstrap, kubeconfig) and carries every
day-two change (scaling, Talos and Kubernetes upgrades, configuration changes). The ` + "`proxmox`" + `
and ` + "`talos`" + ` modules hold the resources it is built from.
`

const readmeConfig = `The provider reads the Proxmox VE API from ` + "`proxmoxtalos:endpoint`" + ` and ` + "`proxmoxtalos:apiToken`" + `
(or ` + "`PROXMOX_VE_ENDPOINT`" + ` and ` + "`PROXMOX_VE_API_TOKEN`" + `).
`

const nodeDescription = "Pulumi components and resources for Talos Linux Kubernetes clusters on Proxmox VE."

const nodeReadme = `# @proxmoxtalos/proxmoxtalos

` + readmeAbout + `
## Install

` + "```sh" + `
npm install @proxmoxtalos/proxmoxtalos @pulumi/pulumi
pulumi plugin install resource proxmoxtalos <version> --file <path to pulumi-resource-proxmoxtalos>
` + "```" + `

Until the package is published, install the tarball built from the repository's ` + "`sdk/nodejs`" + `
(see ` + "`examples/typescript/README.md`" + `).

## Use

` + "```typescript" + `
import * as pulumi from "@pulumi/pulumi";
import * as proxmoxtalos from "@proxmoxtalos/proxmoxtalos";

const size = { cores: 2, memory: 4096, diskSize: 20 }; // memory in MiB, disk in GiB
const cluster = new proxmoxtalos.TalosCluster("cluster", {
    clusterName: "homelab",
    hosts: [{ node: "pve1" }, { node: "pve2" }, { node: "pve3" }],
    network: {
        subnet: "192.168.1.0/24",
        gateway: "192.168.1.1",
        addressRange: { start: "192.168.1.21", end: "192.168.1.40" },
    },
    vip: "192.168.1.20",
    controlPlane: { count: 3, size },
    workerPools: [{ name: "workers", count: 2, size }],
});
export const kubeconfig = pulumi.secret(cluster.kubeconfig);
` + "```" + `

` + readmeConfig

const pythonReadme = `# pulumi_proxmoxtalos

` + readmeAbout + `
## Install

` + "```sh" + `
pip install pulumi_proxmoxtalos
pulumi plugin install resource proxmoxtalos <version> --file <path to pulumi-resource-proxmoxtalos>
` + "```" + `

Until the package is published, install the repository's ` + "`sdk/python`" + ` folder:
` + "`pip install <repository>/sdk/python`" + `.

## Use

` + "```python" + `
import pulumi
import pulumi_proxmoxtalos as proxmoxtalos

size = proxmoxtalos.VmSizeArgs(cores=2, memory=4096, disk_size=20)  # memory in MiB, disk in GiB
cluster = proxmoxtalos.TalosCluster(
    "cluster",
    cluster_name="homelab",
    hosts=[proxmoxtalos.HostArgs(node=n) for n in ["pve1", "pve2", "pve3"]],
    network=proxmoxtalos.NetworkArgs(
        subnet="192.168.1.0/24",
        gateway="192.168.1.1",
        address_range=proxmoxtalos.AddressRangeArgs(start="192.168.1.21", end="192.168.1.40"),
    ),
    vip="192.168.1.20",
    control_plane=proxmoxtalos.ControlPlaneArgs(count=3, size=size),
    worker_pools=[proxmoxtalos.WorkerPoolArgs(name="workers", count=2, size=size)],
)
pulumi.export("kubeconfig", pulumi.Output.secret(cluster.kubeconfig))
` + "```" + `

## Output shapes

Object outputs are Python classes with snake_case attributes: each entry of ` + "`cluster.nodes`" + ` is a
` + "`ClusterNode`" + ` with ` + "`name`, `role`, `pool`, `proxmox_node`, `vm_id`, `address`, `mac_address`" + `. Exported as
they are, the stack output has those snake_case keys, where a YAML, TypeScript, Go or Java program exports the
schema's camelCase keys (` + "`proxmoxNode`, `vmId`, `macAddress`" + `). To export the same shape as the other
languages (so tooling that reads ` + "`pulumi stack output nodes --json`" + ` works with any of them):

` + "```python" + `
from typing import Dict


def node_output(n: proxmoxtalos.outputs.ClusterNode) -> Dict[str, object]:
    return {"name": n.name, "role": n.role, "pool": n.pool, "proxmoxNode": n.proxmox_node,
            "vmId": n.vm_id, "address": n.address, "macAddress": n.mac_address}


pulumi.export("nodes", cluster.nodes.apply(lambda nodes: [node_output(n) for n in nodes]))
` + "```" + `

` + readmeConfig
