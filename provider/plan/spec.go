package plan

// Spec is what a user asks for: one Talos cluster on a pool of Proxmox hosts.
// Field names follow the TalosCluster component's inputs (camelCase there);
// error messages use those input paths. Zero values mean "use the default"
// unless a field says otherwise.
type Spec struct {
	// Name of the cluster (a DNS label). It prefixes every hostname and VM
	// name and cannot change once the cluster exists.
	Name string
	// TalosVersion such as "v1.12.5". Default: the version the cluster runs;
	// for a new cluster, the newest version the provider generates
	// configurations for (DefaultTalosVersion).
	TalosVersion string
	// KubernetesVersion such as "v1.35.2". Default: the version the cluster
	// runs; for a new cluster, the Talos version's default.
	KubernetesVersion string
	// Endpoint of the Kubernetes API: a host, host:port or https URL.
	// Default: the VIP when one is set, otherwise the first control plane.
	Endpoint string
	// ExtraSANs are added to the API server and Talos API certificates.
	ExtraSANs []string

	Image   Image
	Hosts   []Host
	Network Network
	// VIP is a shared layer-2 address the control planes hold (Talos elects
	// the holder through etcd). Optional.
	VIP string

	ControlPlane ControlPlane
	WorkerPools  []WorkerPool

	CloudControllerManager CloudControllerManager
	CNI                    CNI
	// RegistryMirrors by registry host, for example "docker.io".
	RegistryMirrors map[string]RegistryMirror
	// ExtraManifests are URLs the control plane applies after bootstrap.
	ExtraManifests []string
	// InlineManifests are applied after bootstrap like ExtraManifests.
	InlineManifests []InlineManifest
	GitOps          *GitOps

	// AllowSchedulingOnControlPlanes removes the control-plane NoSchedule taint.
	AllowSchedulingOnControlPlanes bool
	// DiskInterface of the OS disk: "scsi" (default), "virtio" or "sata".
	DiskInterface string
	// InstallDisk overrides the disk Talos installs to. Default: derived from
	// DiskInterface (/dev/sda for scsi and sata, /dev/vda for virtio).
	InstallDisk string
	// Patches apply to every node (strategic merge YAML or JSON6902).
	Patches []string
	// WorkerPatches apply to every worker, before its pool's patches.
	WorkerPatches []string
	// NodePatches apply to one node, by node name.
	NodePatches map[string][]string

	VM VMOptions
	// StackTag is the owning stack's tag (StackTag), put on every VM; ""
	// puts none.
	StackTag string
}

// Image says which Talos image the nodes boot and install.
type Image struct {
	// Extensions from the Image Factory, e.g. "siderolabs/qemu-guest-agent"
	// ("qemu-guest-agent" is short for that). nil means the default list
	// (qemu-guest-agent only); an empty non-nil list means none.
	Extensions []string
	// KernelArgs are baked into the Image Factory schematic, so they apply to
	// the ISO boot and to every install and upgrade.
	KernelArgs []string
	// Platform of the image; only "nocloud" is supported (addresses come from
	// the Proxmox cloud-init drive). Default "nocloud".
	Platform string
	// ISOStorage is the storage the ISO is downloaded to on each host.
	// Default "local". Hosts may override it.
	ISOStorage string
	// FactoryURL is the Image Factory base URL (a mirror for air-gapped sites).
	// Default "https://factory.talos.dev".
	FactoryURL string
	// InstallerRegistry hosts the installer images (host[:port][/path]).
	// Default: the Image Factory's own host, which is also a registry.
	InstallerRegistry string
	// Template clones an existing Talos template VM instead of booting the ISO.
	Template *Template
}

// Template is a VM template holding a Talos nocloud disk image.
type Template struct {
	VMID int
	// Node holding the template. Default: each VM's own host (a template per
	// host, as Proxmox clones across nodes only from shared storage).
	Node string
	// FullClone copies the disks (default true); false makes linked clones.
	FullClone *bool
}

// Host is one Proxmox node the cluster may place VMs on.
type Host struct {
	// Node is the Proxmox node name, e.g. "pve1".
	Node string
	// DiskStorage for OS and data disks. Default "local-lvm".
	DiskStorage string
	// ISOStorage overrides Image.ISOStorage on this host.
	ISOStorage string
	// TemplateVMID overrides Image.Template.VMID on this host.
	TemplateVMID int
}

// Network is the nodes' primary network and the DNS settings.
type Network struct {
	NIC
	DNSServers   []string
	SearchDomain string
	// Secondary adds a second NIC to every node (e.g. a storage network).
	Secondary *NIC
}

// NIC is one network attachment and how its addresses are chosen.
type NIC struct {
	// Bridge on the Proxmox hosts. Default "vmbr0" for the primary network.
	Bridge string
	// VLAN tag, 1-4094; 0 means untagged.
	VLAN int
	// MTU of the interface; 0 keeps the bridge's.
	MTU int
	// Subnet in CIDR form, e.g. "192.168.1.0/24". Required on the primary
	// network; on the secondary, leaving it empty means DHCP.
	Subnet string
	// Gateway for the default route (primary network).
	Gateway string
	// AddressRange that node addresses are allocated from, in order, when a
	// node has no explicit address.
	AddressRange *AddressRange
}

// AddressRange is an inclusive range of addresses inside the subnet.
type AddressRange struct {
	Start string
	End   string
}

// ControlPlane describes the control plane nodes.
type ControlPlane struct {
	// Count of control planes: 1, 3 or 5 (etcd needs an odd number).
	// nil means the default 3, or as many as Nodes lists; 0 is refused.
	Count *int
	// Nodes lists control planes explicitly instead of Count.
	Nodes   []NodeSpec
	Size    Size
	Labels  map[string]string
	Taints  []Taint
	Patches []string
}

// WorkerPool is a group of identical workers.
type WorkerPool struct {
	// Name of the pool (a DNS label), part of each worker's hostname.
	Name string
	// Count of workers; ignored when Nodes lists them. 0 is a valid count.
	Count     int
	Nodes     []NodeSpec
	Size      Size
	DataDisks []DataDisk
	Labels    map[string]string
	Taints    []Taint
	Patches   []string
}

// NodeSpec pins one node's identity, place or address. Every field is optional.
type NodeSpec struct {
	// Name (hostname). Default "<cluster>-<pool>-<n>" ("cp" for control planes).
	Name string
	// Host pins the node to a Proxmox node of the host pool.
	Host string
	// Address on the primary network (no prefix; the subnet gives it).
	Address string
	// SecondaryAddress on the secondary network.
	SecondaryAddress string
	// VMID pins the VM id; default: allocated by the provider.
	VMID int
	// MAC of the primary NIC. Default: derived from cluster and node name.
	MAC     string
	Labels  map[string]string
	Taints  []Taint
	Patches []string
}

// Size is a VM's hardware as the spec gives it: nil means the default, and
// an explicit 0 is refused (a VM of 0 cores or a 0 GiB disk is a mistake,
// not a request for the default).
type Size struct {
	// Cores per socket. Default 2.
	Cores *int
	// Sockets. Default 1.
	Sockets *int
	// MemoryMiB of dedicated memory. Default 4096.
	MemoryMiB *int
	// DiskGiB of the OS disk. Default 20.
	DiskGiB *int
}

// hardware is a Size with its defaults resolved.
type hardware struct {
	Cores, Sockets, MemoryMiB, DiskGiB int
}

// DataDisk is an extra disk on each node of a worker pool.
type DataDisk struct {
	SizeGiB int
	// Storage; default the host's DiskStorage.
	Storage string
	// Volume, when set, makes Talos create a user volume on the disk, mounted
	// at /var/mnt/<volume>. Empty leaves the disk raw (e.g. for Rook/Ceph).
	Volume string
}

// Taint is a Kubernetes node taint.
type Taint struct {
	Key    string
	Value  string
	Effect string // NoSchedule, PreferNoSchedule or NoExecute
}

// CloudControllerManager settings. The Talos CCM and the kubelet serving
// certificate approver are on unless Enabled is false.
type CloudControllerManager struct {
	Enabled *bool
	// TalosCCMManifest overrides the Talos CCM manifest URL (air-gapped sites).
	TalosCCMManifest string
	// ServingCertApproverManifest overrides the approver manifest URL.
	ServingCertApproverManifest string
	// Proxmox adds the Proxmox CCM (sergelogvinov/proxmox-cloud-controller-manager).
	Proxmox *ProxmoxCCM
}

// ProxmoxCCM configures the Proxmox cloud controller manager.
type ProxmoxCCM struct {
	// URL of the Proxmox API, e.g. "https://pve.example.com:8006/api2/json".
	URL string
	// TokenID such as "kubernetes@pve!ccm" (needs VM.Audit and Sys.Audit).
	TokenID string
	// TokenSecret is secret: it ends up only in the (secret) machine config.
	TokenSecret string
	// Region label value; default the cluster name.
	Region   string
	Insecure bool
	// Manifest overrides the CCM manifest URL.
	Manifest string
}

// CNI chooses the pod network.
type CNI struct {
	// Name: "flannel" (default, managed by Talos), "cilium", "custom" or "none".
	Name string
	// ManifestURLs install the CNI (cilium and custom).
	ManifestURLs []string
	// InlineManifests install the CNI (cilium and custom), e.g. the output of
	// `helm template cilium`.
	InlineManifests []InlineManifest
	// DisableKubeProxy; default true for cilium, false otherwise.
	DisableKubeProxy *bool
}

// RegistryMirror redirects pulls from one registry.
type RegistryMirror struct {
	Endpoints    []string
	OverridePath bool
	SkipFallback bool
	// Auth logs the nodes in to the endpoints; nil: anonymous.
	Auth *RegistryAuth
}

// RegistryAuth are a mirror's credentials: Username and Password, or an
// IdentityToken.
type RegistryAuth struct {
	Username, Password, IdentityToken string
}

// InlineManifest is a named Kubernetes manifest applied by the control plane.
type InlineManifest struct {
	Name     string
	Contents string
}

// GitOps bootstraps Flux or Argo CD and points it at a repository.
type GitOps struct {
	// Tool: "flux" or "argocd".
	Tool string
	// InstallManifests are URLs of the tool's install manifests (pin a
	// version). Argo CD's upstream install.yaml has no namespace in it: use
	// a manifest rendered for the "argocd" namespace.
	InstallManifests []string
	Repository       GitRepository
}

// GitRepository is the repository a GitOps tool syncs.
type GitRepository struct {
	URL string
	// Branch; default "main".
	Branch string
	// Path inside the repository; default ".".
	Path string
}

// VMOptions apply to every VM of the cluster.
type VMOptions struct {
	// CPUType; default "x86-64-v2-AES". Talos needs x86-64-v2 or newer.
	CPUType string
	// OnBoot starts the VMs with their host; default true.
	OnBoot *bool
	// Tags added to every VM besides the cluster's own identity tags.
	Tags []string
}
