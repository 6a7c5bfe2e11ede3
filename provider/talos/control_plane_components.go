package talos

import (
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"

	"github.com/proxmoxtalos/proxmoxtalos/provider/docs"
	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// ControlPlaneComponents is the first phase of a Kubernetes upgrade on one
// control plane: its kube-apiserver, controller manager, scheduler and
// kube-proxy images move to the new version; its kubelet stays for the
// second phase (the node's ConfigurationApply).
type ControlPlaneComponents struct {
	// opts tune polling; tests shorten the pauses.
	opts talosapi.Options
}

// Annotate documents the resource.
func (r *ControlPlaneComponents) Annotate(a infer.Annotator) {
	a.Describe(r, docs.Description("proxmoxtalos:talos:ControlPlaneComponents"))
}

// ControlPlaneComponentsArgs are the inputs.
type ControlPlaneComponentsArgs struct {
	Node                string              `pulumi:"node"`
	Endpoints           []string            `pulumi:"endpoints,optional"`
	ClientConfiguration ClientConfiguration `pulumi:"clientConfiguration" provider:"secret"`
	KubernetesVersion   string              `pulumi:"kubernetesVersion"`
	HealthGate          *HealthGate         `pulumi:"healthGate,optional"`
	Timeouts            *Timeouts           `pulumi:"timeouts,optional"`
	VmIds               map[string]int      `pulumi:"vmIds,optional"` //nolint:revive // Pulumi name
	ControlPlaneComponentsPreview
}

// ControlPlaneComponentsPreview holds what Check derives for previews; an
// output in the schema (see ConfigurationApplyPreview).
type ControlPlaneComponentsPreview struct {
	Change    *string `pulumi:"change,optional"`
	GateLists *string `pulumi:"gateLists,optional"`
}

// Annotate documents the derived value.
func (v *ControlPlaneComponentsPreview) Annotate(an infer.Annotator) {
	an.Describe(&v.Change, "What an update of kubernetesVersion does, in one line (`control plane components "+
		"v1.34.1 → v1.35.2, kubelet later`), so that previews say it.")
	an.Describe(&v.GateLists, gateListsDoc)
}

// Annotate documents the inputs.
func (a *ControlPlaneComponentsArgs) Annotate(an infer.Annotator) {
	framework.Annotate(an, a, func() {
		an.Describe(&a.Node, "The control plane's own address (IP or DNS name, optional `:port`, default port 50000).")
		an.Describe(&a.Endpoints, "Talos API endpoints to reach the node through (talosctl --endpoints). Default: the "+
			"node itself.")
		an.Describe(&a.ClientConfiguration, "The cluster's Talos client configuration (MachineSecrets.clientConfiguration).")
		an.Describe(&a.KubernetesVersion, "The Kubernetes version the control plane components must run, like `v1.35.2`. "+
			"A change updates the resource, which moves the components (not the kubelet) to it.")
		an.Describe(&a.HealthGate, "Cluster health to wait for before and after changing the node. Default: none.")
		an.Describe(&a.Timeouts, "Limits for waiting on the node.")
		an.Describe(&a.VmIds, vmIdsDoc+" For this resource: the node's own VM and those of the health gate's required nodes.")
	})
}

// ControlPlaneComponentsState is the state.
type ControlPlaneComponentsState struct {
	ControlPlaneComponentsArgs
	Outcome string `pulumi:"outcome"`
}

// Annotate documents the outputs.
func (s *ControlPlaneComponentsState) Annotate(a infer.Annotator) {
	a.Describe(&s.Outcome, "What the last create or update did: `updated` (the component images were moved), "+
		"`current` (they already were on the version), or `not-configured` (the node was in maintenance mode). "+
		"Empty when the last create or update failed after it changed the node (the next update checks again).")
}

// Outcomes of a ControlPlaneComponents operation.
const (
	componentsUpdated       = "updated"
	componentsCurrent       = "current"
	componentsNotConfigured = "not-configured"
)
