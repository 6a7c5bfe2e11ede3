package talos

import (
	"context"
	"time"

	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/vmwatch"

	"github.com/proxmoxtalos/proxmoxtalos/provider/docs"
	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// ConfigurationApply applies a machine configuration to one Talos node and
// keeps the node on it: the configuration, and the Talos version its
// installer image names.
type ConfigurationApply struct {
	// opts tune polling; tests shorten the pauses.
	opts talosapi.Options
	// vms, when set, is what a refresh asks about the node's VM instead of
	// the provider's Proxmox client; readWait, when set, bounds a refresh
	// instead of readTimeout. Tests set them.
	vms      vmwatch.Source
	readWait time.Duration
	// readConfig, when set, reads the node instead of
	// talosapi.ReadConfigFor (tests serve texts the lab cannot hold).
	readConfig func(context.Context, talosapi.Target, talosapi.Options, talosapi.ApplyMode) (*talosapi.NodeConfig, talosapi.Mode, string, error)
	// answers and reset, when set (both), stand in for talosapi.Answers and
	// talosapi.Reset in Delete (tests time the resets).
	answers func(context.Context, talosapi.Target, talosapi.Options, time.Duration) (bool, error)
	reset   func(context.Context, talosapi.Target, talosapi.ResetRequest, talosapi.Options) (talosapi.ResetResult, error)
	// leaving, when set, are the per-cluster locks of Delete instead of
	// the package's (tests keep theirs apart from other tests' clusters).
	leaving *clusterLocks
}

// Annotate documents the resource.
func (r *ConfigurationApply) Annotate(a infer.Annotator) {
	a.Describe(r, docs.Description("proxmoxtalos:talos:ConfigurationApply"))
}

// ApplyMode is how a configuration change takes effect.
type ApplyMode string

// Values lists the apply modes (talosctl apply-config --mode).
func (ApplyMode) Values() []infer.EnumValue[ApplyMode] {
	return []infer.EnumValue[ApplyMode]{
		{Name: "Auto", Value: "auto", Description: "Talos 1.13 and older: without a reboot when Talos can apply the change live, " +
			"with a reboot otherwise. Talos 1.14 and newer: always without a reboot; a change that needed one (such as " +
			"machine.env) takes effect at the node's next reboot, which the preview and the update warn of (use `reboot` to reboot now)."},
		{Name: "NoReboot", Value: "no-reboot", Description: "Without a reboot. Talos 1.13 and older refuse a change that needs " +
			"a reboot (the update fails, the preview warns); Talos 1.14 and newer apply it, and it takes effect at the node's next reboot."},
		{Name: "Reboot", Value: "reboot", Description: "Always reboot the node (on Talos 1.14 and newer, which have no such " +
			"apply mode: applied without a reboot, then rebooted through the Talos Reboot API)."},
		{Name: "Staged", Value: "staged", Description: "Save the configuration for the next reboot; the node keeps running the old one."},
		{Name: "Try", Value: "try", Description: "Apply live and roll back after tryTimeout unless applied again."},
	}
}

// Annotate documents the type.
func (e *ApplyMode) Annotate(a infer.Annotator) {
	a.Describe(e, "How a machine configuration change takes effect on a node (talosctl apply-config --mode).")
}

// ResetOnDelete says what destroy does to the node.
type ResetOnDelete struct {
	Enabled  *bool `pulumi:"enabled,optional"`
	Graceful *bool `pulumi:"graceful,optional"`
	Reboot   *bool `pulumi:"reboot,optional"`
	// ControlPlanes reach the Kubernetes API after the reset.
	ControlPlanes []string `pulumi:"controlPlanes,optional"`
}

// Annotate documents the type.
func (r *ResetOnDelete) Annotate(a infer.Annotator) {
	framework.Annotate(a, r, func() {
		a.Describe(r, "Reset the node when the resource is destroyed: its system disk is wiped.")
		a.Describe(&r.Enabled, "Reset the node on destroy. Default `false`: the node keeps running its configuration.")
		a.Describe(&r.Graceful, "Cordon and drain the node and, on a control plane, leave etcd first, so the cluster "+
			"keeps quorum and no etcd member is left behind. Default `true`. The cluster's last etcd member cannot "+
			"leave: it is reset without leaving (with a log line saying so), as at the end of a whole-cluster destroy. "+
			"Set `false` only for a node whose cluster is gone.")
		a.Describe(&r.Reboot, "Reboot after the reset (a node booted from the ISO comes back in maintenance mode). "+
			"Default `false`: the node powers off.")
		a.Describe(&r.ControlPlanes, "Control plane addresses (Talos API) to delete the node's Kubernetes Node object "+
			"through after the reset: a reset leaves it behind, NotReady, as after `talosctl reset` (which is why "+
			"`kubectl delete node` follows it). An admin kubeconfig is fetched from the first one that answers and the "+
			"object is deleted through that control plane's own Kubernetes API (port 6443), only if it still carries "+
			"this node's address. The node itself is skipped. When none answers, the destroy still succeeds and warns. "+
			"When the node itself does not answer (gone), its etcd member, if it was a control plane, is removed "+
			"through the first of them that answers too. Default: none, the Node object stays.")
	})
}

// HealthGate is the cluster health a node's changes wait for.
type HealthGate struct {
	ControlPlanes      []string `pulumi:"controlPlanes"`
	Workers            []string `pulumi:"workers,optional"`
	OtherNodes         []string `pulumi:"otherNodes,optional"`
	KubernetesEndpoint *string  `pulumi:"kubernetesEndpoint,optional"`
	Vm                 *string  `pulumi:"vm,optional"` //nolint:revive // Pulumi name
	Timeout            *string  `pulumi:"timeout,optional"`
	ClusterCreate      *bool    `pulumi:"clusterCreate,optional"`
}

// clusterCreate: the node is created with its cluster (g may be nil).
func (g *HealthGate) clusterCreate() bool {
	return g != nil && g.ClusterCreate != nil && *g.ClusterCreate
}

// Annotate documents the type.
func (g *HealthGate) Annotate(a infer.Annotator) {
	framework.Annotate(a, g, func() {
		a.Describe(g, "Cluster health that changes to the node wait for, so that a rollout over many nodes goes one "+
			"healthy node at a time. An update that changes the node waits, before touching it, until the required nodes "+
			"other than this one are healthy, and afterwards until all of them, this one included, are. A create waits "+
			"only before (the first control plane is bootstrapped after its create). Healthy means what ClusterHealth "+
			"checks: the Talos services up, etcd's members exactly the required control planes (voting), and every "+
			"required node Ready in Kubernetes, through an admin kubeconfig fetched from a required control plane. A "+
			"change of the gate alone does not update the resource (it is read by the next update that touches the "+
			"node), except `vm`.")
		a.Describe(&g.ControlPlanes, "Addresses (Talos API) of the control planes that must be healthy, this node "+
			"included when it is one. At least one.")
		a.Describe(&g.Workers, "Addresses of the workers that must be healthy, this node included when it is one.")
		a.Describe(&g.OtherNodes, "Addresses of the cluster's other nodes, not required: nodes later in a rollout or "+
			"removed by the same update. They may or may not be etcd members or Kubernetes nodes.")
		a.Describe(&g.KubernetesEndpoint, "The Kubernetes API URL to check the nodes through, for example the VIP's "+
			"`https://192.168.1.220:6443`. Default: the cluster endpoint of the fetched kubeconfig.")
		a.Describe(&g.Vm, "The node's VM settings as `key=value` pairs separated by spaces (for example `cores=2 "+
			"memory=4096MiB diskStorage=local-lvm`), set by whoever changes the VM. A change means the VM restarted with new "+
			"settings, or, when only `diskSize`, `diskStorage` or `dataDisks` change and no sata or ide disk is added or "+
			"removed, that its disks moved, grew or were hot-plugged while it ran: the "+
			"update waits until the cluster, this node included, is healthy again, without touching the node, so that "+
			"the next node's VM changes only then. The values compare as a set: a key with another value or a key "+
			"left out is a change; a key the stored value lacks (written by an older provider) is not, and an update that "+
			"touches no node records it.")
		a.Describe(&g.Timeout, "How long each wait for health may take, as a Go duration. Default `10m`.")
		a.Describe(&g.ClusterCreate, "The node is created together with its cluster, one that has never been "+
			"bootstrapped (no node of it ran before): its create neither waits for the required nodes nor for the "+
			"node to install; it gives the node its configuration and returns, as `talosctl apply-config` does, and "+
			"the etcd bootstrap and a ClusterHealth check wait for the nodes. Read by a create only: updates wait as "+
			"usual. If the install then fails, the health check says so and `pulumi refresh` (the node is back in "+
			"maintenance mode) lets the next update apply the configuration again. TalosCluster also keeps it on an "+
			"existing node that an update leaves exactly as it is, so that its inputs stay those its create stored; "+
			"only a create reads it. Default false.")
	})
}

// UpgradeOptions tune Talos upgrades.
type UpgradeOptions struct {
	Stage    *bool `pulumi:"stage,optional"`
	Preserve *bool `pulumi:"preserve,optional"`
}

// Annotate documents the type.
func (u *UpgradeOptions) Annotate(a infer.Annotator) {
	framework.Annotate(a, u, func() {
		a.Describe(u, "How a Talos upgrade is run (talosctl upgrade flags).")
		a.Describe(&u.Stage, "Stage the upgrade and perform it after a reboot, for nodes where files in use block an "+
			"upgrade. Default `false`.")
		a.Describe(&u.Preserve, "Keep the EPHEMERAL partition of a node that runs Talos older than 1.8. Talos 1.8 "+
			"and later always keep it, and there preserve would only turn off Talos's own etcd pre-upgrade check "+
			"and upgrade lock on a control plane (Talos 1.12.9, 1.13.4, 1.14 and later skip them when it is set), "+
			"so it is not sent to nodes that run 1.8 or later (the update logs that it was left out). Default `false`.")
	})
}

// ConfigurationApplyArgs are the inputs.
type ConfigurationApplyArgs struct {
	Node                 string              `pulumi:"node"`
	Endpoints            []string            `pulumi:"endpoints,optional"`
	ClientConfiguration  ClientConfiguration `pulumi:"clientConfiguration" provider:"secret"`
	MachineConfiguration string              `pulumi:"machineConfiguration" provider:"secret"`
	ApplyMode            *ApplyMode          `pulumi:"applyMode,optional"`
	TryTimeout           *string             `pulumi:"tryTimeout,optional"`
	TalosVersion         *string             `pulumi:"talosVersion,optional"`
	Upgrade              *UpgradeOptions     `pulumi:"upgrade,optional"`
	Reset                *ResetOnDelete      `pulumi:"reset,optional"`
	HealthGate           *HealthGate         `pulumi:"healthGate,optional"`
	Timeouts             *Timeouts           `pulumi:"timeouts,optional"`
	MachineId            *string             `pulumi:"machineId,optional"` //nolint:revive // Pulumi name
	SensitiveValues      []string            `pulumi:"sensitiveValues,optional" provider:"secret"`
	VmIds                map[string]int      `pulumi:"vmIds,optional"` //nolint:revive // Pulumi name
	ConfigurationApplyPreview
}

// ConfigurationApplyPreview holds what Check derives for the preview of an
// update. Pulumi's display takes a detailed diff's new values from the
// checked inputs, so these travel there; the schema lists them as outputs
// only (PreviewOutputs): no user sets them.
type ConfigurationApplyPreview struct {
	ConfigView   map[string]string `pulumi:"configView,optional"`
	ConfigChange *string           `pulumi:"configChange,optional"`
	GateLists    *string           `pulumi:"gateLists,optional"`
}

// Annotate documents the derived values (outputs in the schema).
func (v *ConfigurationApplyPreview) Annotate(an infer.Annotator) {
	an.Describe(&v.ConfigView, "The configuration as path → value with secret values replaced by a fingerprint, "+
		"derived from machineConfiguration, so that previews of updates show which paths change.")
	an.Describe(&v.ConfigChange, "What an update does to the node, in one line (`live: 1 path, no reboot`, "+
		"`reboot: machine.env`, `upgrade v1.12.5 → v1.12.6 (reboot, VM kept)`, `reboot: VM restart (cores 2 → 4)`), "+
		"so that previews say it next to the changed paths. Set only when the configuration or the VM changes.")
	an.Describe(&v.GateLists, gateListsDoc)
}

// gateListsDoc documents gateLists (gate_lists.go), an output of the
// resources with a health gate.
const gateListsDoc = "What the state keeps of the health gate's `workers` and `otherNodes` and of `vmIds`: their " +
	"counts and SHA-256 (`2 workers, 3 other nodes, 4 VMIDs: sha256:…`). The lists name nodes across the whole " +
	"cluster, so the state does not keep them (nor `vmIds` beyond the node's own VMID): the create or update that " +
	"waits on them gets them as inputs, as before, and checks exactly those nodes. Because of that, " +
	"`ignoreChanges` on these lists or on `vmIds` keeps nothing: when it drops lists the last update had (the " +
	"engine applies it from the last inputs, which no longer hold them), Check fails, naming the list, instead of " +
	"shrinking the gate; pass the lists explicitly (an empty list if there are none) or remove the field from " +
	"`ignoreChanges`. TalosCluster always passes them. Unset when there is nothing to leave out, or " +
	"when a preview does not know the lists yet. As an input it is for previews only: TalosCluster's preview of " +
	"an existing node passes the gateLists its update would store, without the lists and with the node's own " +
	"VMID only, so that a preview without changes checks to the state as it is (and the Pulumi CLI writes no " +
	"state for it); Check keeps it when there are no lists to move. A create or update with a gateLists whose " +
	"lists its provider process did not check fails before it touches the node."

// Annotate documents the inputs.
func (a *ConfigurationApplyArgs) Annotate(an infer.Annotator) {
	framework.Annotate(an, a, func() {
		an.Describe(&a.Node, "The node's address (IP or DNS name, optional `:port`, default port 50000). Use the node's "+
			"own address, never a VIP: the VIP exists only once etcd runs. Changing it replaces the resource.")
		an.Describe(&a.Endpoints, "Talos API endpoints to reach a configured node through (talosctl --endpoints), for "+
			"example the control planes when workers are not reachable directly. Default: the node itself. A node in "+
			"maintenance mode is always contacted directly.")
		an.Describe(&a.ClientConfiguration, "The cluster's Talos client configuration (MachineSecrets.clientConfiguration).")
		an.Describe(&a.MachineConfiguration, "The machine configuration to apply (YAML, one or more documents), for "+
			"example from getMachineConfiguration.")
		an.Describe(&a.ApplyMode, "How configuration changes take effect on a configured node. Default `auto`. The first "+
			"install from maintenance mode always reboots into the installed system.")
		an.Describe(&a.TryTimeout, "For `applyMode: try`: how long Talos keeps the configuration before rolling back, as "+
			"a Go duration. Default Talos's (1m).")
		an.Describe(&a.TalosVersion, "The Talos version the node must run, like `v1.12.5`. Default: the version in the "+
			"tag of the configuration's `machine.install.image`. A node on another version is upgraded in place.")
		an.Describe(&a.Upgrade, "How Talos upgrades are run.")
		an.Describe(&a.Reset, "What destroy does to the node. Default: nothing (the node keeps running).")
		an.Describe(&a.HealthGate, "Cluster health to wait for before and after changing the node. Default: none.")
		an.Describe(&a.Timeouts, "Limits for waiting on the node.")
		an.Describe(&a.MachineId, "The identity of the machine behind `node`, for example the VM's SMBIOS UUID "+
			"(VirtualMachine.smbiosUuid). When it changes, another machine answers at the same address (a replaced VM, "+
			"fresh from the ISO): the resource is replaced, deleting the old one first (its reset, if enabled, finds "+
			"either the old machine or a node in maintenance mode, which it leaves alone), so that the new machine is "+
			"configured from maintenance mode. Setting it for the first time, or removing it, changes nothing on the node; "+
			"a value not known yet (preview) is no change: the update that knows it replaces the resource.")
		an.Describe(&a.VmIds, vmIdsDoc+" For this resource: the node's own VM and those of the health gate's required "+
			"nodes; destroy (the reset) does not use it.")
		an.Describe(&a.SensitiveValues, "Texts to treat as secret wherever they appear in machineConfiguration, besides the "+
			"values Talos itself holds secret (keys, tokens, passwords): configView shows a leaf that is or contains one as "+
			"`(sensitive)`, and errors never quote one. For values that came from a Pulumi secret (a secret patch); "+
			"TalosCluster sets it from its secret inputs. Secret.")
	})
}

// ConfigurationApplyState is the state: the inputs and what the node runs.
type ConfigurationApplyState struct {
	ConfigurationApplyArgs
	ConfigDigest   string `pulumi:"configDigest"`
	InstalledImage string `pulumi:"installedImage"`
	RunningVersion string `pulumi:"runningVersion"`
	AppliedMode    string `pulumi:"appliedMode"`
}

// Annotate documents the outputs.
func (s *ConfigurationApplyState) Annotate(a infer.Annotator) {
	framework.Annotate(a, s, func() {
		a.Describe(&s.ConfigDigest, "SHA-256 of the applied configuration's contents (comments and formatting ignored), "+
			"as compared with what the node runs.")
		a.Describe(&s.InstalledImage, "The installer image the node was installed or last upgraded with.")
		a.Describe(&s.RunningVersion, "The Talos version the node runs.")
		a.Describe(&s.AppliedMode, "How the last configuration change took effect: `install`, `no-reboot`, `reboot`, "+
			"`staged`, `try`, or `none` when the node already ran it.")
	})
}
