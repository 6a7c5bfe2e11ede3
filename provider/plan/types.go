package plan

// Role of a node in the cluster.
type Role string

// The two Talos machine roles.
const (
	RoleControlPlane Role = "controlplane"
	RoleWorker       Role = "worker"
)

// ControlPlanePool is the pool name of the control planes in node identities.
const ControlPlanePool = "cp"

// Facts is what the component learned from Proxmox before planning.
type Facts struct {
	// Hosts by Proxmox node name. nil skips the capacity checks (and the
	// plan says so in a warning); a non-nil map must hold every pool host.
	Hosts map[string]HostFacts
	// Silent are the existing nodes that did not answer as configured
	// Talos nodes when asked what they run before planning (down, in
	// maintenance mode, unreachable); nil when the nodes were not asked.
	Silent map[string]bool
	// Membership says which nodes existed before this run apart from their
	// VMs (the cluster's members, else the stack's state): a planned node
	// without a VM that existed lost its VM outside Pulumi, and is created
	// again at its address.
	Membership
	// Guests are the Proxmox cluster's VMs and containers by VMID, which
	// the new VMs' pinned VMIDs and templates are checked against; nil:
	// not known (not checked).
	Guests map[int]Guest
}

// HostFacts is one Proxmox node's state.
type HostFacts struct {
	Online bool
	// FreeMemoryMiB is the memory new VMs can still use on the host.
	FreeMemoryMiB int64
	// CPUs is the host's logical CPU count; 0 means unknown.
	CPUs int
	// Storages are the host's active storages with the content types
	// each holds ("images", "iso"); nil: not known (not checked).
	Storages map[string][]string
	// Bridges are the host's Linux and OVS bridges; nil: not known.
	Bridges []string
}

// Plan is the per-node plan for one cluster.
type Plan struct {
	Cluster   ClusterConfig
	Endpoints Endpoints
	// Nodes in canonical order: control planes, then worker pools in spec
	// order, each by ordinal.
	Nodes []Node
	// Removed lists nodes of the previous state that the spec no longer has,
	// in the order they must leave: workers first, then control planes one
	// at a time, highest ordinal first.
	Removed []NodeState
	// Bootstrap is the control plane that etcd is bootstrapped on.
	Bootstrap string
	// Rollout is the order for upgrades: control planes first, one at a
	// time, then workers.
	Rollout []string
	// StageRequires are the nodes the control plane component stages (the
	// first phase of a Kubernetes upgrade) require to be healthy (waits.go).
	StageRequires []string
	// NewCluster: no node of the cluster existed before this update, so
	// its nodes are brought up together rather than one healthy node at a
	// time (waits.go).
	NewCluster bool
	// ISOs lists the image downloads: on each host, the ISO of the plan's
	// version and schematic when a new node boots it, and every ISO an
	// existing node booted from (empty when cloning a template).
	ISOs []ISODownload
	// Warnings are worth showing but do not stop the plan.
	Warnings []string
	// Unchecked are the planned nodes without a VM of which it is not
	// known whether they had one: neither the cluster's members nor the
	// stack's state could be read (Membership). They are planned as new;
	// an update refuses to add them (UncheckedRefusal) unless the user
	// said to (Membership.AddAnyway).
	Unchecked []string
	// uncheckedWhy says what could not be read, for Unchecked.
	uncheckedWhy string
	// uncheckedRefused are the Unchecked nodes an update refuses to add.
	uncheckedRefused []string
	// uncheckedStray says which names EnvAddUnchecked lists that are not
	// Unchecked nodes (a typo, or a node that has a VM), "" when none: the
	// refusal says so, so that a misspelt name is not silently ignored.
	uncheckedStray string
}

// ClusterConfig holds the machine configuration inputs every node shares.
type ClusterConfig struct {
	Name              string
	TalosVersion      string
	KubernetesVersion string
	// Endpoint is the Kubernetes API URL in every machine config.
	Endpoint string
	// CertSANs for the API server and Talos API certificates.
	CertSANs []string
	Image    ImageConfig
	CNI      CNIConfig
	// ProxyDisabled turns off kube-proxy (cluster.proxy.disabled).
	ProxyDisabled bool
	// ExternalCloudProvider is set when a CCM runs (cluster.externalCloudProvider).
	ExternalCloudProvider *ExternalCloudProvider
	ExtraManifests        []string
	// InlineManifests may hold secrets (the Proxmox CCM credentials): the
	// machine configuration is secret as a whole.
	InlineManifests                []InlineManifest
	AllowSchedulingOnControlPlanes bool
	// RegistryMirrors sorted by registry.
	RegistryMirrors []Mirror
	// Patches apply to every node, first.
	Patches []Patch
}

// ImageConfig is the Image Factory schematic and the images built from it.
type ImageConfig struct {
	Platform   string
	Extensions []string
	KernelArgs []string
	// SchematicID is the Image Factory's ID of the schematic.
	SchematicID string
	// ISO is the URL of the boot ISO for the Talos version.
	ISO string
	// Installer is the installer image for machine.install.image and
	// upgrades, e.g. factory.talos.dev/nocloud-installer/<id>:v1.12.5.
	Installer string
}

// CNIConfig is cluster.network.cni.
type CNIConfig struct {
	// Name as Talos knows it: flannel, custom or none.
	Name string
	URLs []string
}

// ExternalCloudProvider is cluster.externalCloudProvider.
type ExternalCloudProvider struct {
	Manifests []string
}

// Mirror is one machine.registries.mirrors entry.
type Mirror struct {
	Registry     string
	Endpoints    []string
	OverridePath bool
	SkipFallback bool
	Auth         *RegistryAuth
}

// Patch is one user patch with where it came from, so an error can say which.
type Patch struct {
	// Source is the input path, e.g. "workerPools[0].patches[1]".
	Source  string
	Content string
}

// Endpoints say where to talk to the cluster.
type Endpoints struct {
	// Kubernetes is the API URL in machine configs and the final kubeconfig.
	Kubernetes string
	// Bootstrap is the address of the first control plane: bootstrap and
	// the first kubeconfig go there, since the VIP only answers after etcd
	// is up (Talos elects the VIP holder through etcd).
	Bootstrap string
	// BootstrapKubernetes is the API URL on the bootstrap node, used until
	// the Kubernetes endpoint answers.
	BootstrapKubernetes string
	// Talos lists the control planes' own addresses for the talosconfig;
	// never the VIP, which moves between nodes and is down before bootstrap.
	Talos []string
}

// Node is everything the component needs for one node.
type Node struct {
	Name    string
	Role    Role
	Pool    string
	Ordinal int
	// Existing is true when the node is in the previous state.
	Existing bool
	// Power is the state of an existing node's VM as Proxmox reported it
	// before planning: PowerNone for a new node, PowerMissing for one whose
	// VM is gone although the cluster knows the node.
	Power Power
	// Unfinished: the stack's state says the last create or update of the
	// node's VM failed part-way (offline previews only; Power is then
	// PowerRunning, as that update leaves it).
	Unfinished bool
	// Waits says what the node's steps wait for in an update (waits.go).
	Waits  Waits
	VM     VM
	Config NodeConfig
}

// VM is the Proxmox side of a node.
type VM struct {
	Host string
	// VMID is the node's VM id: the one the user pinned, else the one the
	// existing VM has; 0 when the provider allocates one.
	VMID int
	// VMIDPinned is true when the user gave the VM id (nodes[].vmId); an id
	// taken over from the existing VM is not pinned.
	VMIDPinned bool
	Name       string
	Cores      int
	Sockets    int
	CPUType    string
	MemoryMiB  int
	OSDisk     Disk
	DataDisks  []Disk
	NICs       []NICConfig
	// DNSServers and SearchDomain go to the cloud-init drive.
	DNSServers   []string
	SearchDomain string
	// Agent is on when the image has the qemu-guest-agent extension.
	Agent  bool
	OnBoot bool
	Tags   []string
	Boot   Boot
}

// Disk is one VM disk.
type Disk struct {
	// Interface such as "scsi0" or "virtio1".
	Interface string
	Storage   string
	SizeGiB   int
	// Device is the Linux device the disk appears as inside Talos.
	Device string
	// Volume is the Talos user volume name, if any.
	Volume string
}

// NICConfig is one network device and its cloud-init address.
type NICConfig struct {
	Bridge string
	VLAN   int
	MTU    int
	MAC    string
	// Address in CIDR form ("192.168.1.10/24"); empty means DHCP.
	Address string
	Gateway string
}

// Boot says how the VM gets Talos: an ISO (ISOFile in ISOStorage), or a
// clone.
type Boot struct {
	ISOStorage string
	ISOFile    string
	CloneVMID  int
	CloneNode  string
	FullClone  bool
}

// NodeConfig holds one node's own machine configuration inputs.
type NodeConfig struct {
	Hostname    string
	Role        Role
	InstallDisk string
	// KubeletExtraArgs is machine.kubelet.extraArgs.
	KubeletExtraArgs map[string]string
	// TalosAPIAccess is machine.features.kubernetesTalosAPIAccess (control
	// planes, when the Talos CCM runs).
	TalosAPIAccess *TalosAPIAccess
	// VIP is the shared address on the control planes' primary link.
	VIP        *VIPConfig
	NodeLabels map[string]string
	// NodeTaints in Talos form: key -> "value:Effect" or "Effect".
	NodeTaints map[string]string
	// Volumes are Talos user volumes on data disks.
	Volumes []Volume
	// Patches in apply order: cluster, role, pool, node.
	Patches []Patch
}

// TalosAPIAccess is machine.features.kubernetesTalosAPIAccess.
type TalosAPIAccess struct {
	AllowedRoles                []string
	AllowedKubernetesNamespaces []string
}

// VIPConfig is a layer-2 VIP and the link it lives on, found by MAC so the
// config does not depend on interface naming.
type VIPConfig struct {
	Address string
	LinkMAC string
}

// Volume is a Talos UserVolumeConfig on one disk.
type Volume struct {
	Name   string
	Device string
}
