package cluster

import (
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// TalosClusterArgs are the component's inputs. They are plain Go values
// because the plan is computed from them when the component is
// constructed, also in preview, so that the preview lists every VM and
// every node change. The schema marks plain, nested ones included
// (PlainInputs), those the plan counts or places nodes with; the others
// (patches, manifests, mirrors, the network's bridge, VLAN, MTU and DNS)
// may be outputs of other resources, planned with a placeholder while
// unknown (acceptInputValues, vm_inputs.go). The Proxmox CCM token secret
// is a pulumi.Input so that it stays a Pulumi secret. Zero values mean the
// default.
type TalosClusterArgs struct {
	ClusterName       string   `pulumi:"clusterName"`
	TalosVersion      string   `pulumi:"talosVersion,optional"`
	KubernetesVersion string   `pulumi:"kubernetesVersion,optional"`
	Endpoint          string   `pulumi:"endpoint,optional"`
	ExtraSans         []string `pulumi:"extraSans,optional"`

	Image   *Image  `pulumi:"image,optional"`
	Hosts   []Host  `pulumi:"hosts"`
	Network Network `pulumi:"network"`
	Vip     string  `pulumi:"vip,optional"`

	ControlPlane *ControlPlane `pulumi:"controlPlane,optional"`
	WorkerPools  []WorkerPool  `pulumi:"workerPools,optional"`

	CloudControllerManager *CloudControllerManager   `pulumi:"cloudControllerManager,optional"`
	Cni                    *Cni                      `pulumi:"cni,optional"`
	RegistryMirrors        map[string]RegistryMirror `pulumi:"registryMirrors,optional"`
	ExtraManifests         []string                  `pulumi:"extraManifests,optional"`
	InlineManifests        []InlineManifest          `pulumi:"inlineManifests,optional"`
	GitOps                 *GitOps                   `pulumi:"gitOps,optional"`

	AllowSchedulingOnControlPlanes bool                `pulumi:"allowSchedulingOnControlPlanes,optional"`
	DiskInterface                  *DiskBus            `pulumi:"diskInterface,optional"`
	InstallDisk                    string              `pulumi:"installDisk,optional"`
	Patches                        []string            `pulumi:"patches,optional"`
	WorkerPatches                  []string            `pulumi:"workerPatches,optional"`
	NodePatches                    map[string][]string `pulumi:"nodePatches,optional"`
	Vm                             *VmOptions          `pulumi:"vm,optional"`
}

// Annotate documents the inputs.
func (a *TalosClusterArgs) Annotate(an infer.Annotator) {
	framework.Annotate(an, a, func() {
		an.Describe(&a.ClusterName, "Name of the cluster, a DNS label such as `homelab`. It prefixes every node name "+
			"(`<clusterName>-cp-1`, `<clusterName>-<pool>-1`), tags the cluster's VMs (`cluster-<clusterName>`) and "+
			"cannot change once the cluster exists.")
		an.Describe(&a.TalosVersion, "Talos version the nodes run, like `v1.12.5` (`1.12.5` is the same; a release line "+
			"such as `v1.12` is refused, as it does not say which release). Default: the version the cluster "+
			"runs; for a new cluster, the newest version the provider generates configurations for. Changing it upgrades "+
			"the nodes in place through the Talos Upgrade API, one at a time, control planes first; the VMs stay.")
		an.Describe(&a.KubernetesVersion, "Kubernetes version, like `v1.35.2` (`1.35.2` is the same; `v1.35` is "+
			"refused); checked against the Talos version's "+
			"support matrix. Default: the version the cluster runs; for a new cluster, the Talos version's default. "+
			"Upgrades go one minor version at a time, in two phases: the control plane components (API server, "+
			"controller manager, scheduler, kube-proxy) on every control plane, one at a time, then the kubelets node by "+
			"node, control planes first, so that no kubelet is newer than an API server.")
		an.Describe(&a.Endpoint, "The Kubernetes API endpoint written into every machine configuration and the "+
			"kubeconfig: a host, `host:port` or `https://host:port` (port default 6443). Default: the VIP when `vip` "+
			"is set, otherwise the first control plane's address.")
		an.Describe(&a.ExtraSans, "Extra DNS names and IP addresses for the API server and Talos API certificates. "+
			"The VIP and the endpoint host are included already.")
		an.Describe(&a.Image, "Which Talos image the VMs boot and install. Default: the Image Factory's nocloud "+
			"image with the `qemu-guest-agent` extension, downloaded to each host's `local` storage.")
		an.Describe(&a.Hosts, "The Proxmox nodes to place VMs on. Control planes are spread across them (at most "+
			"one per host while there are enough hosts), workers balanced per pool; the hosts' free memory is checked "+
			"for the whole cluster before anything is created.")
		an.Describe(&a.Network, "The nodes' network: bridge, VLAN, subnet, gateway, DNS and how addresses are "+
			"chosen. Node addresses are static, given to Talos through the Proxmox cloud-init drive.")
		an.Describe(&a.Vip, "A shared virtual IP for the Kubernetes API, held by one control plane at a time (Talos "+
			"elects the holder through etcd, so it answers only after bootstrap). It must be inside `network.subnet` "+
			"and outside `network.addressRange`. Recommended with more than one control plane.")
		an.Describe(&a.ControlPlane, "The control plane nodes. Default: 3 nodes of 2 cores, 4096 MiB, 20 GiB.")
		an.Describe(&a.WorkerPools, "Groups of identical workers. Default: none (schedule on control planes with "+
			"`allowSchedulingOnControlPlanes`).")
		an.Describe(&a.CloudControllerManager, "The cloud controller manager. On by default: the Talos CCM and the "+
			"kubelet serving certificate approver are installed and every kubelet runs with "+
			"`cloud-provider: external` and `rotate-server-certificates: true`, so nodes get `spec.providerID` and "+
			"their serving certificates are approved.")
		an.Describe(&a.Cni, "The pod network. Default: flannel, managed by Talos.")
		an.Describe(&a.RegistryMirrors, "Registry mirrors by registry host (`docker.io`, `ghcr.io`, or `*` for all).")
		an.Describe(&a.ExtraManifests, "URLs of Kubernetes manifests the control planes apply after bootstrap.")
		an.Describe(&a.InlineManifests, "Kubernetes manifests, given inline, that the control planes apply after "+
			"bootstrap. They end up in the (secret) machine configurations.")
		an.Describe(&a.GitOps, "Bootstrap Flux or Argo CD and point it at a Git repository.")
		an.Describe(&a.AllowSchedulingOnControlPlanes, "Let ordinary workloads run on control planes. Default `false`.")
		an.Describe(&a.DiskInterface, "Bus of the VMs' disks. Default `scsi` (Talos sees `/dev/sda`); `virtio` "+
			"disks are `/dev/vda`.")
		an.Describe(&a.InstallDisk, "The disk Talos installs to. Default: derived from `diskInterface` "+
			"(`/dev/sda` for scsi and sata, `/dev/vda` for virtio).")
		an.Describe(&a.Patches, "Machine configuration patches for every node (strategic merge YAML, one or more "+
			"documents, or JSON6902 where the configuration is a single document), applied after the cluster's own "+
			"settings, before role, pool and node patches.")
		an.Describe(&a.WorkerPatches, "Patches for every worker, applied before the pool's own patches.")
		an.Describe(&a.NodePatches, "Patches for single nodes, by node name (for example `homelab-cp-1`), applied last.")
		an.Describe(&a.Vm, "Settings for every VM of the cluster.")
	})
}

// Image says which Talos image the nodes boot and install.
type Image struct {
	Extensions        []string  `pulumi:"extensions,optional"`
	KernelArgs        []string  `pulumi:"kernelArgs,optional"`
	Platform          string    `pulumi:"platform,optional"`
	IsoStorage        string    `pulumi:"isoStorage,optional"`
	FactoryUrl        string    `pulumi:"factoryUrl,optional"` //nolint:revive // Pulumi name
	InstallerRegistry string    `pulumi:"installerRegistry,optional"`
	Template          *Template `pulumi:"template,optional"`

	SkipSchematicRegistration bool `pulumi:"skipSchematicRegistration,optional"`
}

// Annotate documents the image settings.
func (i *Image) Annotate(a infer.Annotator) {
	framework.Annotate(a, i, func() {
		a.Describe(i, "The Talos image: an Image Factory schematic (extensions, kernel arguments) for the nocloud "+
			"platform, booted from an ISO the hosts download, or a template VM to clone.")
		a.Describe(&i.Extensions, "Official system extensions, like `siderolabs/iscsi-tools` (`iscsi-tools` is short "+
			"for it). Default `[siderolabs/qemu-guest-agent]`; an empty list means none. Without the guest agent "+
			"Proxmox cannot see the nodes' addresses or shut them down gracefully. Changing the list upgrades the "+
			"nodes to the new image, one at a time. A preview checks the names against the Image Factory's list "+
			"for the Talos version (`<factoryUrl>/version/<talos>/extensions/official`) and refuses unknown ones, "+
			"naming the closest; a factory that does not answer only warns then.")
		a.Describe(&i.KernelArgs, "Extra kernel arguments baked into the schematic, one argument per entry.")
		a.Describe(&i.Platform, "Talos platform of the image. Only `nocloud` (the default) is supported: node "+
			"addresses come from the Proxmox cloud-init drive, which Talos reads on the nocloud platform.")
		a.Describe(&i.IsoStorage, "Storage each host downloads the ISO into (content type `iso`). Default `local`; "+
			"`hosts[].isoStorage` overrides it per host.")
		a.Describe(&i.FactoryUrl, "Base URL of the Image Factory, or of a mirror for air-gapped sites. Default "+
			"`https://factory.talos.dev`.")
		a.Describe(&i.InstallerRegistry, "Registry of the installer images (`host[:port][/path]`), for air-gapped "+
			"sites. Default: the Image Factory's own registry.")
		a.Describe(&i.SkipSchematicRegistration, "Do not register the schematic with the Image Factory (an "+
			"air-gapped mirror that serves a fixed set of schematics and has no API). Default `false`: the schematic is "+
			"registered before the hosts download the ISO, since a factory builds images only for schematics it knows.")
		a.Describe(&i.Template, "Clone this template VM (holding a Talos nocloud disk image) instead of booting the "+
			"ISO.")
	})
}

// Template is a VM template holding a Talos nocloud disk image.
type Template struct {
	VmId      int    `pulumi:"vmId"` //nolint:revive // Pulumi name
	Node      string `pulumi:"node,optional"`
	FullClone *bool  `pulumi:"fullClone,optional"`
}

// Annotate documents the template.
func (t *Template) Annotate(a infer.Annotator) {
	framework.Annotate(a, t, func() {
		a.Describe(t, "A template VM to clone the cluster's VMs from, instead of booting the Talos ISO: it holds a Talos nocloud disk image.")
		a.Describe(&t.VmId, "VMID of the template. `hosts[].templateVmId` overrides it per host.")
		a.Describe(&t.Node, "Proxmox node holding the template. Default: each VM's own host (one template per host, "+
			"since Proxmox clones across nodes only from shared storage).")
		a.Describe(&t.FullClone, "Copy the disks. Default `true`; `false` makes linked clones.")
	})
}

// Host is one Proxmox node of the host pool.
type Host struct {
	Node         string `pulumi:"node"`
	DiskStorage  string `pulumi:"diskStorage,optional"`
	IsoStorage   string `pulumi:"isoStorage,optional"`
	TemplateVmId int    `pulumi:"templateVmId,optional"` //nolint:revive // Pulumi name
}

// Annotate documents a host.
func (h *Host) Annotate(a infer.Annotator) {
	framework.Annotate(a, h, func() {
		a.Describe(h, "A Proxmox node the cluster may place VMs on.")
		a.Describe(&h.Node, "The Proxmox node name, like `pve1`.")
		a.Describe(&h.DiskStorage, "Storage for the VMs' disks and cloud-init drives (content type `images`). "+
			"Default `local-lvm`.")
		a.Describe(&h.IsoStorage, "Storage for the Talos ISO on this host. Default `image.isoStorage`.")
		a.Describe(&h.TemplateVmId, "Template VMID on this host, overriding `image.template.vmId`.")
	})
}

// Network is the nodes' primary network.
type Network struct {
	Bridge       string        `pulumi:"bridge,optional"`
	Vlan         int           `pulumi:"vlan,optional"`
	Mtu          int           `pulumi:"mtu,optional"`
	Subnet       string        `pulumi:"subnet"`
	Gateway      string        `pulumi:"gateway,optional"`
	AddressRange *AddressRange `pulumi:"addressRange,optional"`
	DnsServers   []string      `pulumi:"dnsServers,optional"`
	SearchDomain string        `pulumi:"searchDomain,optional"`
	Secondary    *Nic          `pulumi:"secondary,optional"`
}

// Annotate documents the network.
func (n *Network) Annotate(a infer.Annotator) {
	framework.Annotate(a, n, func() {
		a.Describe(n, "The primary network of the nodes: bridge, VLAN, subnet and gateway, and where node addresses come from (explicit per node, or allocated in node order from `addressRange`).")
		a.Describe(&n.Bridge, "Bridge on the hosts. Default `vmbr0`. "+outputNote)
		a.Describe(&n.Vlan, "VLAN tag, 1-4094. Default (or 0): untagged. "+outputNote)
		a.Describe(&n.Mtu, "MTU of the NIC. Default (or 0): the bridge's. "+outputNote)
		a.Describe(&n.Subnet, "The node subnet in CIDR form, like `192.168.1.0/24`.")
		a.Describe(&n.Gateway, "Default gateway of the nodes.")
		a.Describe(&n.AddressRange, "Range that node addresses are allocated from, in node order, for nodes without "+
			"an explicit address. Allocation is stable: a node keeps its address for its life, and adding a node "+
			"never renumbers the others.")
		a.Describe(&n.DnsServers, "DNS servers of the nodes. Default: the Proxmox host's. "+outputNote)
		a.Describe(&n.SearchDomain, "DNS search domain. Default: the Proxmox host's. "+outputNote)
		a.Describe(&n.Secondary, "A second NIC on every node, for example a storage network.")
	})
}

// outputNote documents the network settings that may be outputs of other
// resources (vm_inputs.go).
const outputNote = "May be another resource's output (a bridge or VLAN another provider creates, DNS servers from a " +
	"stack reference); while it is not known, a preview shows every VM's setting as changing once known. Not a " +
	"secret: Proxmox shows it to anyone who can read the VM."

// Nic is a secondary network attachment.
type Nic struct {
	Bridge       string        `pulumi:"bridge"`
	Vlan         int           `pulumi:"vlan,optional"`
	Mtu          int           `pulumi:"mtu,optional"`
	Subnet       string        `pulumi:"subnet,optional"`
	Gateway      string        `pulumi:"gateway,optional"`
	AddressRange *AddressRange `pulumi:"addressRange,optional"`
}

// Annotate documents the secondary NIC.
func (n *Nic) Annotate(a infer.Annotator) {
	framework.Annotate(a, n, func() {
		a.Describe(n, "A second NIC on every node, for example a storage network: bridge, VLAN, MTU and its own addresses (DHCP without a subnet).")
		a.Describe(&n.Bridge, "Bridge on the hosts, like `vmbr1`. "+outputNote)
		a.Describe(&n.Vlan, "VLAN tag, 1-4094. Default (or 0): untagged. "+outputNote)
		a.Describe(&n.Mtu, "MTU of the NIC. Default (or 0): the bridge's. "+outputNote)
		a.Describe(&n.Subnet, "Subnet in CIDR form. Default: none, the NIC uses DHCP.")
		a.Describe(&n.Gateway, "Gateway on this network, if any.")
		a.Describe(&n.AddressRange, "Range that secondary addresses are allocated from.")
	})
}

// AddressRange is an inclusive range of addresses.
type AddressRange struct {
	Start string `pulumi:"start"`
	End   string `pulumi:"end"`
}

// Annotate documents the range.
func (r *AddressRange) Annotate(a infer.Annotator) {
	framework.Annotate(a, r, func() {
		a.Describe(r, "An inclusive range of IPv4 addresses inside the subnet that node addresses are allocated from, in node order; adding a node never renumbers the others. The VIP must lie outside it.")
		a.Describe(&r.Start, "First address of the range, inside the subnet.")
		a.Describe(&r.End, "Last address of the range (inclusive).")
	})
}

// ControlPlane describes the control plane nodes.
type ControlPlane struct {
	Count   *int              `pulumi:"count,optional"`
	Nodes   []NodeSettings    `pulumi:"nodes,optional"`
	Size    *VmSize           `pulumi:"size,optional"`
	Labels  map[string]string `pulumi:"labels,optional"`
	Taints  []Taint           `pulumi:"taints,optional"`
	Patches []string          `pulumi:"patches,optional"`
}

// Annotate documents the control plane settings.
func (c *ControlPlane) Annotate(a infer.Annotator) {
	framework.Annotate(a, c, func() {
		a.Describe(c, "The control plane nodes: `count` (1, 3 or 5; default 3) or explicit `nodes`, their VM size (default 2 cores, 4096 MiB memory, 20 GiB disk), labels, taints and patches.")
		a.Describe(&c.Count, "Number of control planes: 1, 3 or 5 (etcd needs an odd number to keep quorum). "+
			"Default 3 (0 is refused). Leave it unset when `nodes` lists them. Scaling down removes the highest-numbered nodes one "+
			"at a time, each leaving etcd before its VM is destroyed.")
		a.Describe(&c.Nodes, "Control planes listed one by one (name, host, address, ...) instead of `count`.")
		a.Describe(&c.Size, "VM size of each control plane. Default 2 cores, 4096 MiB, 20 GiB.")
		a.Describe(&c.Labels, "Kubernetes labels of the control plane nodes.")
		a.Describe(&c.Taints, "Kubernetes taints of the control plane nodes.")
		a.Describe(&c.Patches, "Machine configuration patches for the control planes.")
	})
}

// WorkerPool is a group of identical workers.
type WorkerPool struct {
	Name      string            `pulumi:"name"`
	Count     int               `pulumi:"count,optional"`
	Nodes     []NodeSettings    `pulumi:"nodes,optional"`
	Size      *VmSize           `pulumi:"size,optional"`
	DataDisks []DataDisk        `pulumi:"dataDisks,optional"`
	Labels    map[string]string `pulumi:"labels,optional"`
	Taints    []Taint           `pulumi:"taints,optional"`
	Patches   []string          `pulumi:"patches,optional"`
}

// Annotate documents a worker pool.
func (w *WorkerPool) Annotate(a infer.Annotator) {
	framework.Annotate(a, w, func() {
		a.Describe(w, "A pool of worker nodes with one name, size (default 2 cores, 4096 MiB memory, 20 GiB disk), data disks, labels, taints and patches; `count` (default 0) or explicit `nodes`.")
		a.Describe(&w.Name, "Name of the pool, a DNS label; part of each worker's name (`<clusterName>-<name>-1`).")
		a.Describe(&w.Count, "Number of workers; 0 is a pool without nodes. Default 0. Scaling down removes the highest-numbered workers, "+
			"each drained before its VM is destroyed.")
		a.Describe(&w.Nodes, "Workers listed one by one instead of `count`.")
		a.Describe(&w.Size, "VM size of each worker. Default 2 cores, 4096 MiB, 20 GiB.")
		a.Describe(&w.DataDisks, "Extra disks on each worker.")
		a.Describe(&w.Labels, "Kubernetes labels of the pool's nodes.")
		a.Describe(&w.Taints, "Kubernetes taints of the pool's nodes.")
		a.Describe(&w.Patches, "Machine configuration patches for the pool's nodes.")
	})
}

// NodeSettings pins one node's identity, place or address.
type NodeSettings struct {
	Name             string            `pulumi:"name,optional"`
	Host             string            `pulumi:"host,optional"`
	Address          string            `pulumi:"address,optional"`
	SecondaryAddress string            `pulumi:"secondaryAddress,optional"`
	VmId             int               `pulumi:"vmId,optional"` //nolint:revive // Pulumi name
	MacAddress       string            `pulumi:"macAddress,optional"`
	Labels           map[string]string `pulumi:"labels,optional"`
	Taints           []Taint           `pulumi:"taints,optional"`
	Patches          []string          `pulumi:"patches,optional"`
}

// Annotate documents a listed node.
func (n *NodeSettings) Annotate(a infer.Annotator) {
	framework.Annotate(a, n, func() {
		a.Describe(n, "One node of a list. Every field is optional.")
		a.Describe(&n.Name, "Node name and hostname, a DNS label. Default `<clusterName>-<pool>-<n>` (`cp` for control "+
			"planes).")
		a.Describe(&n.Host, "Proxmox node of the host pool to place the VM on. Default: chosen by the placement.")
		a.Describe(&n.Address, "Address on the primary network, without prefix length. Default: allocated from "+
			"`network.addressRange`.")
		a.Describe(&n.SecondaryAddress, "Address on the secondary network.")
		a.Describe(&n.VmId, "VMID of the VM. Default (or 0): allocated safely by the provider.")
		a.Describe(&n.MacAddress, "MAC address of the primary NIC. Default: derived from the cluster and node name, "+
			"stable for the node's life.")
		a.Describe(&n.Labels, "Kubernetes labels of this node, added to the pool's.")
		a.Describe(&n.Taints, "Kubernetes taints of this node, added to the pool's.")
		a.Describe(&n.Patches, "Machine configuration patches for this node.")
	})
}

// VmSize is the hardware of a VM.
type VmSize struct {
	Cores    *int `pulumi:"cores,optional"`
	Sockets  *int `pulumi:"sockets,optional"`
	Memory   *int `pulumi:"memory,optional"`
	DiskSize *int `pulumi:"diskSize,optional"`
}

// Annotate documents the size.
func (s *VmSize) Annotate(a infer.Annotator) {
	framework.Annotate(a, s, func() {
		a.Describe(s, "The VM size of a node: CPU cores and sockets, memory in MiB and OS disk in GiB. Defaults: 2 cores, 1 socket, 4096 MiB, 20 GiB.")
		a.Describe(&s.Cores, "CPU cores per socket. Default 2 (0 is refused: leave it out for the default). A change "+
			"restarts the VMs one at a time.")
		a.Describe(&s.Sockets, "CPU sockets. Default 1 (0 is refused).")
		a.Describe(&s.Memory, "Memory in MiB (4 GiB is 4096). Default 4096 (0 is refused). Talos needs at least 2048 on control "+
			"planes and 1024 on workers. A change restarts the VMs one at a time.")
		a.Describe(&s.DiskSize, "OS disk size in GiB. Default 20, at least 10 (0 is refused: leave it out for the "+
			"default). Disks grow in place, one node at a time with a health check after each, and never shrink.")
	})
}

// DataDisk is an extra disk on each worker of a pool.
type DataDisk struct {
	Size    int    `pulumi:"size"`
	Storage string `pulumi:"storage,optional"`
	Volume  string `pulumi:"volume,optional"`
}

// Annotate documents a data disk.
func (d *DataDisk) Annotate(a infer.Annotator) {
	framework.Annotate(a, d, func() {
		a.Describe(d, "An extra disk on each worker of a pool, in GiB, optionally formatted as a Talos user volume.")
		a.Describe(&d.Size, "Size in GiB, at least 1. Disks grow in place and never shrink.")
		a.Describe(&d.Storage, "Storage of the disk. Default: the host's `diskStorage`.")
		a.Describe(&d.Volume, "Name of a Talos user volume to create on the disk, mounted at `/var/mnt/<volume>` "+
			"(Talos 1.10 and later). Default: none, the disk stays raw (for example for Rook/Ceph).")
	})
}

// Taint is a Kubernetes node taint.
type Taint struct {
	Key    string      `pulumi:"key"`
	Value  string      `pulumi:"value,optional"`
	Effect TaintEffect `pulumi:"effect"`
}

// Annotate documents a taint.
func (t *Taint) Annotate(a infer.Annotator) {
	framework.Annotate(a, t, func() {
		a.Describe(t, "A Kubernetes taint (`key=value:effect`) on nodes.")
		a.Describe(&t.Key, "Taint key, like `dedicated`.")
		a.Describe(&t.Value, "Taint value. Default: none.")
		a.Describe(&t.Effect, "What the taint does to pods that do not tolerate it.")
	})
}

// CloudControllerManager settings.
type CloudControllerManager struct {
	Enabled                     *bool                          `pulumi:"enabled,optional"`
	TalosCcmManifest            string                         `pulumi:"talosCcmManifest,optional"`
	ServingCertApproverManifest string                         `pulumi:"servingCertApproverManifest,optional"`
	Proxmox                     *ProxmoxCloudControllerManager `pulumi:"proxmox,optional"`
}

// Annotate documents the CCM settings.
func (c *CloudControllerManager) Annotate(a infer.Annotator) {
	framework.Annotate(a, c, func() {
		a.Describe(c, "The cloud controller manager: on by default, it installs the Talos CCM and the kubelet serving certificate approver, so nodes get a `providerID` and their serving certificates are approved.")
		a.Describe(&c.Enabled, "Install the Talos CCM and the kubelet serving certificate approver, and run kubelets "+
			"with an external cloud provider. Default `true`.")
		a.Describe(&c.TalosCcmManifest, "URL of the Talos CCM manifest, for air-gapped sites. Default: the upstream "+
			"manifest of siderolabs/talos-cloud-controller-manager.")
		a.Describe(&c.ServingCertApproverManifest, "URL of the kubelet serving certificate approver manifest. "+
			"Default: the upstream manifest of alex1989hu/kubelet-serving-cert-approver.")
		a.Describe(&c.Proxmox, "Also run the Proxmox CCM (sergelogvinov/proxmox-cloud-controller-manager), which "+
			"labels nodes with their Proxmox region and zone and removes nodes whose VM is gone.")
	})
}

// ProxmoxCloudControllerManager configures the Proxmox CCM.
type ProxmoxCloudControllerManager struct {
	Url         string             `pulumi:"url"`     //nolint:revive // Pulumi name
	TokenId     string             `pulumi:"tokenId"` //nolint:revive // Pulumi name
	TokenSecret pulumi.StringInput `pulumi:"tokenSecret" provider:"secret"`
	Region      string             `pulumi:"region,optional"`
	Insecure    bool               `pulumi:"insecure,optional"`
	Manifest    string             `pulumi:"manifest,optional"`
}

// Annotate documents the Proxmox CCM settings.
func (p *ProxmoxCloudControllerManager) Annotate(a infer.Annotator) {
	framework.Annotate(a, p, func() {
		a.Describe(p, "The Proxmox cloud controller manager (sergelogvinov/proxmox-cloud-controller-manager) and the API token it uses; it labels nodes with their Proxmox region and zone.")
		a.Describe(&p.Url, "URL of the Proxmox API as the cluster reaches it, like "+
			"`https://pve.example.com:8006/api2/json`.")
		a.Describe(&p.TokenId, "API token ID for the CCM, like `kubernetes@pve!ccm` (needs VM.Audit and Sys.Audit).")
		a.Describe(&p.TokenSecret, "The token's secret. Secret: it is written only into the control planes' (secret) "+
			"machine configurations, as a Kubernetes Secret manifest.")
		a.Describe(&p.Region, "Region name the CCM gives this Proxmox cluster. Default: the cluster name.")
		a.Describe(&p.Insecure, "Skip TLS verification of the Proxmox API. Default `false`.")
		a.Describe(&p.Manifest, "URL of the Proxmox CCM manifest. Default: the upstream manifest for Talos.")
	})
}

// Cni chooses the pod network.
type Cni struct {
	Name             *CniName         `pulumi:"name,optional"`
	ManifestUrls     []string         `pulumi:"manifestUrls,optional"`
	InlineManifests  []InlineManifest `pulumi:"inlineManifests,optional"`
	DisableKubeProxy *bool            `pulumi:"disableKubeProxy,optional"`
}

// Annotate documents the CNI settings.
func (c *Cni) Annotate(a infer.Annotator) {
	framework.Annotate(a, c, func() {
		a.Describe(c, "The pod network (CNI): Talos' flannel by default, none, Cilium or another CNI from manifests.")
		a.Describe(&c.Name, "The CNI. Default `flannel`.")
		a.Describe(&c.ManifestUrls, "URLs of the CNI's manifests (cilium and custom).")
		a.Describe(&c.InlineManifests, "The CNI's manifests inline (cilium and custom), for example the output of "+
			"`helm template cilium`.")
		a.Describe(&c.DisableKubeProxy, "Run without kube-proxy. Default `true` for cilium, `false` otherwise.")
	})
}

// RegistryMirror redirects pulls from one registry.
type RegistryMirror struct {
	Endpoints    []string      `pulumi:"endpoints"`
	OverridePath bool          `pulumi:"overridePath,optional"`
	SkipFallback bool          `pulumi:"skipFallback,optional"`
	Auth         *RegistryAuth `pulumi:"auth,optional"`
}

// RegistryAuth is how the nodes log in to a mirror.
type RegistryAuth struct {
	Username      string `pulumi:"username,optional"`
	Password      string `pulumi:"password,optional" provider:"secret"`
	IdentityToken string `pulumi:"identityToken,optional" provider:"secret"`
}

// Annotate documents the credentials.
func (r *RegistryAuth) Annotate(a infer.Annotator) {
	framework.Annotate(a, r, func() {
		a.Describe(r, "Credentials for the mirror's endpoints, written into every node's (secret) machine configuration as "+
			"`machine.registries.config.<endpoint host>.auth`. Give them as Pulumi secrets (`pulumi config set --secret`, "+
			"`pulumi.secret(...)`): they stay secret in the state, and the preview shows them as `(sensitive)`.")
		a.Describe(&r.Username, "User name, with `password`.")
		a.Describe(&r.Password, "Password or access token, with `username`.")
		a.Describe(&r.IdentityToken, "An identity token (OAuth refresh token) instead of `username` and `password`.")
	})
}

// Annotate documents a mirror.
func (r *RegistryMirror) Annotate(a infer.Annotator) {
	framework.Annotate(a, r, func() {
		a.Describe(r, "Mirrors of one container registry, tried in order before the registry itself.")
		a.Describe(&r.Endpoints, "Mirror URLs, tried in order, like `https://mirror.example.com`.")
		a.Describe(&r.OverridePath, "The endpoints include the full path (for example Harbor projects). Default `false`.")
		a.Describe(&r.SkipFallback, "Do not fall back to the upstream registry. Default `false`.")
		a.Describe(&r.Auth, "Credentials for the endpoints. Default: none (anonymous pulls).")
	})
}

// InlineManifest is a named Kubernetes manifest.
type InlineManifest struct {
	Name     string `pulumi:"name"`
	Contents string `pulumi:"contents"`
}

// Annotate documents an inline manifest.
func (m *InlineManifest) Annotate(a infer.Annotator) {
	framework.Annotate(a, m, func() {
		a.Describe(m, "A Kubernetes manifest applied by Talos at bootstrap and kept in the machine configuration (`cluster.inlineManifests`).")
		a.Describe(&m.Name, "Name of the manifest, unique in the cluster.")
		a.Describe(&m.Contents, "The manifest YAML (one or more documents).")
	})
}

// GitOps bootstraps Flux or Argo CD.
type GitOps struct {
	Tool             GitOpsTool    `pulumi:"tool"`
	InstallManifests []string      `pulumi:"installManifests"`
	Repository       GitRepository `pulumi:"repository"`
}

// Annotate documents the GitOps settings.
func (g *GitOps) Annotate(a infer.Annotator) {
	framework.Annotate(a, g, func() {
		a.Describe(g, "A GitOps tool (Flux or Argo CD) installed at bootstrap, and the Git repository it syncs the cluster from.")
		a.Describe(&g.Tool, "The GitOps tool.")
		a.Describe(&g.InstallManifests, "URLs of the tool's install manifests, pinned to a version. Argo CD's "+
			"`install.yaml` has no namespace: give one rendered for the `argocd` namespace.")
		a.Describe(&g.Repository, "The repository the tool syncs the cluster from.")
	})
}

// GitRepository is the repository a GitOps tool syncs.
type GitRepository struct {
	Url    string `pulumi:"url"` //nolint:revive // Pulumi name
	Branch string `pulumi:"branch,optional"`
	Path   string `pulumi:"path,optional"`
}

// Annotate documents the repository.
func (g *GitRepository) Annotate(a infer.Annotator) {
	framework.Annotate(a, g, func() {
		a.Describe(g, "A Git repository a GitOps tool syncs the cluster from (branch default `main`, path default `.`).")
		a.Describe(&g.Url, "Clone URL of the repository.")
		a.Describe(&g.Branch, "Branch to follow. Default `main`.")
		a.Describe(&g.Path, "Path inside the repository. Default `.`.")
	})
}

// VmOptions apply to every VM.
type VmOptions struct {
	CpuType string   `pulumi:"cpuType,optional"` //nolint:revive // Pulumi name
	OnBoot  *bool    `pulumi:"onBoot,optional"`
	Tags    []string `pulumi:"tags,optional"`
}

// Annotate documents the VM options.
func (v *VmOptions) Annotate(a infer.Annotator) {
	framework.Annotate(a, v, func() {
		a.Describe(v, "Proxmox VM settings shared by every node of the cluster: CPU type, start on host boot, tags.")
		a.Describe(&v.CpuType, "Emulated CPU model. Default `x86-64-v2-AES`; Talos needs x86-64-v2 or newer "+
			"(`kvm64` does not boot). `host` passes the host CPU through.")
		a.Describe(&v.OnBoot, "Start the VMs when their host boots. Default `true`.")
		a.Describe(&v.Tags, "Extra Proxmox tags on every VM, besides the cluster's own (`proxmoxtalos`, "+
			"`cluster-<name>`, the role, for workers `pool-<name>`, and `stack-<hash>` for the Pulumi project and stack "+
			"that own the cluster); these names and prefixes are refused here. No version tags: the component asks the nodes "+
			"which Talos and Kubernetes versions they run.")
	})
}
