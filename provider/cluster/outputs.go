package cluster

import (
	"context"
	"reflect"

	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// TalosCluster is the component: its outputs.
type TalosCluster struct {
	pulumi.ResourceState

	Kubeconfig        pulumi.StringOutput      `pulumi:"kubeconfig" provider:"secret"`
	Talosconfig       pulumi.StringOutput      `pulumi:"talosconfig" provider:"secret"`
	MachineSecrets    pulumi.StringOutput      `pulumi:"machineSecrets" provider:"secret"`
	Endpoint          pulumi.StringOutput      `pulumi:"endpoint"`
	TalosVersion      pulumi.StringOutput      `pulumi:"talosVersion"`
	KubernetesVersion pulumi.StringOutput      `pulumi:"kubernetesVersion"`
	Nodes             ClusterNodeArrayOutput   `pulumi:"nodes"`
	Summary           pulumi.StringOutput      `pulumi:"summary"`
	Warnings          pulumi.StringArrayOutput `pulumi:"warnings"`
}

// Annotate documents the outputs.
func (c *TalosCluster) Annotate(a infer.Annotator) {
	framework.Annotate(a, c, func() {
		a.Describe(&c.Kubeconfig, "Admin kubeconfig pointing at `endpoint`. It resolves once the cluster is healthy "+
			"through that endpoint (for a VIP: once the VIP answers). Secret.")
		a.Describe(&c.Talosconfig, "talosconfig for `talosctl`, as `talosctl config endpoint`/`node` would set it up: "+
			"the control planes' own addresses as endpoints (never the VIP, which needs etcd: Talos advises against it) "+
			"and the first control plane as the default node, so that `talosctl kubeconfig`, `etcd members` or "+
			"`dashboard` work without `-n`; give `-n <address>` for other nodes (the `nodes` output lists them). Secret.")
		a.Describe(&c.MachineSecrets, "The cluster's Talos secrets bundle (CAs, keys, tokens) in the YAML form of "+
			"`talosctl gen secrets`. Back it up: it is needed to recover the cluster. Secret.")
		a.Describe(&c.Endpoint, "The Kubernetes API URL, like `https://192.168.1.220:6443`.")
		a.Describe(&c.TalosVersion, "The Talos version the nodes are planned to run.")
		a.Describe(&c.KubernetesVersion, "The Kubernetes version the nodes are planned to run.")
		a.Describe(&c.Nodes, "Every node: name, role, Proxmox node, VMID, address and MAC, control planes first.")
		a.Describe(&c.Summary, "What the update does to the nodes, in one line a reviewer reads in ten seconds: "+
			"nodes added, removed (drained, leaving etcd first), replaced, upgraded (one at a time, control planes "+
			"first), rebooted (and why) and updated live, and version changes, for example `all 5 nodes upgraded one "+
			"at a time, control planes first (Talos v1.12.5 → v1.12.6; VMs kept)`. In a preview it is the pending "+
			"update; an update stores what the cluster is then (for example `5 nodes (3 control planes, 2 workers), "+
			"Talos v1.12.5, Kubernetes v1.35.2`), which a preview without changes computes the same, so such a "+
			"preview shows no output change. A part names at most four nodes (three, then `+N more`). Each node's ConfigurationApply says what happens "+
			"to it (`configChange`), and lists the configuration paths that change.")
		a.Describe(&c.Warnings, "Things worth knowing that did not stop the update (for example control planes that "+
			"share a host).")
	})
}

// ClusterNode describes one node of the cluster.
type ClusterNode struct {
	Name        string   `pulumi:"name"`
	Role        NodeRole `pulumi:"role"`
	Pool        string   `pulumi:"pool"`
	ProxmoxNode string   `pulumi:"proxmoxNode"`
	VmId        int      `pulumi:"vmId"` //nolint:revive // Pulumi name
	Address     string   `pulumi:"address"`
	MacAddress  string   `pulumi:"macAddress"`
}

// Annotate documents a node.
func (n *ClusterNode) Annotate(a infer.Annotator) {
	framework.Annotate(a, n, func() {
		a.Describe(n, "One node of the cluster as built: its name, role, pool, Proxmox node, VMID, address and MAC address.")
		a.Describe(&n.Name, "Node name, also its hostname, VM name and Kubernetes node name.")
		a.Describe(&n.Role, "Talos machine type.")
		a.Describe(&n.Pool, "Worker pool name (`cp` for control planes).")
		a.Describe(&n.ProxmoxNode, "Proxmox node the VM runs on.")
		a.Describe(&n.VmId, "VMID of the VM.")
		a.Describe(&n.Address, "Address of the node on the primary network.")
		a.Describe(&n.MacAddress, "MAC address of the primary NIC.")
	})
}

// ClusterNodeArrayOutput is an output of a list of ClusterNode.
type ClusterNodeArrayOutput struct{ *pulumi.OutputState }

// ElementType is []ClusterNode.
func (ClusterNodeArrayOutput) ElementType() reflect.Type {
	return reflect.TypeOf((*[]ClusterNode)(nil)).Elem()
}

// ToClusterNodeArrayOutput returns the output itself.
func (o ClusterNodeArrayOutput) ToClusterNodeArrayOutput() ClusterNodeArrayOutput { return o }

// ToClusterNodeArrayOutputWithContext returns the output itself.
func (o ClusterNodeArrayOutput) ToClusterNodeArrayOutputWithContext(context.Context) ClusterNodeArrayOutput {
	return o
}

func init() {
	pulumi.RegisterOutputType(ClusterNodeArrayOutput{})
}
