package talos

import (
	"context"
	"reflect"
	"strconv"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"

	"github.com/proxmoxtalos/proxmoxtalos/provider/docs"
	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// ClusterHealth waits until a cluster is healthy; a gate between steps.
type ClusterHealth struct {
	opts talosapi.Options
}

// Annotate documents the resource.
func (r *ClusterHealth) Annotate(a infer.Annotator) {
	a.Describe(r, docs.Description("proxmoxtalos:talos:ClusterHealth"))
}

// ClusterHealthArgs are the inputs.
type ClusterHealthArgs struct {
	ControlPlanes       []string            `pulumi:"controlPlanes"`
	Workers             []string            `pulumi:"workers,optional"`
	Endpoints           []string            `pulumi:"endpoints,optional"`
	ClientConfiguration ClientConfiguration `pulumi:"clientConfiguration" provider:"secret"`
	Kubeconfig          *string             `pulumi:"kubeconfig,optional" provider:"secret"`
	KubernetesEndpoint  *string             `pulumi:"kubernetesEndpoint,optional"`
	Triggers            []string            `pulumi:"triggers,optional"`
	Recheck             *string             `pulumi:"recheck,optional"`
	OtherNodes          []string            `pulumi:"otherNodes,optional"`
	KubernetesVersion   *string             `pulumi:"kubernetesVersion,optional"`
	BootstrapManifests  []string            `pulumi:"bootstrapManifests,optional"`
	Timeouts            *Timeouts           `pulumi:"timeouts,optional"`
	VmIds               map[string]int      `pulumi:"vmIds,optional"` //nolint:revive // Pulumi name
	ClusterHealthPreview
}

// ClusterHealthPreview holds what Check derives for previews; an output in
// the schema (see ConfigurationApplyPreview).
type ClusterHealthPreview struct {
	Requires *string `pulumi:"requires,optional"`
}

// Annotate documents the derived value.
func (v *ClusterHealthPreview) Annotate(an infer.Annotator) {
	an.Describe(&v.Requires, "What the check requires, in one line (`3 control planes, 2 workers; API "+
		"https://192.168.1.220:6443`), so that a preview says in one line how the check changes.")
}

// Annotate documents the inputs.
func (a *ClusterHealthArgs) Annotate(an infer.Annotator) {
	framework.Annotate(an, a, func() {
		an.Describe(&a.ControlPlanes, "Addresses of every control plane node (not the VIP).")
		an.Describe(&a.Workers, "Addresses of every worker node.")
		an.Describe(&a.Endpoints, "Talos API endpoints to reach the nodes through. Default: each node itself.")
		an.Describe(&a.ClientConfiguration, "The cluster's Talos client configuration.")
		an.Describe(&a.Kubeconfig, "An admin kubeconfig. Without it the Kubernetes checks are skipped.")
		an.Describe(&a.KubernetesEndpoint, "The Kubernetes API URL to check instead of the kubeconfig's server, for "+
			"example the first control plane's `https://192.168.1.21:6443` before the VIP answers.")
		an.Describe(&a.Triggers, "Any values; when one changes, health is checked again on update.")
		an.Describe(&a.Recheck, "A reason to check again in this update, whatever else changes: for example nodes that "+
			"were down and that the update starts (`VMs that were not running: demo-cp-2`). Whenever it is set, the update "+
			"checks health again; unset, it is no reason to.")
		an.Describe(&a.OtherNodes, "Addresses of the cluster's nodes that this check does not require: nodes later in "+
			"a rollout, or nodes the same update removes (Pulumi deletes removed resources after the others). They "+
			"may or may not be etcd members or Kubernetes nodes when the check runs; neither is reported. A change "+
			"of this list alone does not check again.")
		an.Describe(&a.KubernetesVersion, "The Kubernetes version every node runs once the check passes, like `v1.36.3`. "+
			"When an update changes it (a Kubernetes upgrade), the update, once the cluster is healthy, syncs the "+
			"bootstrap manifests (kube-proxy, CoreDNS, flannel, extraManifests, inlineManifests) that a control plane "+
			"renders from its configuration, as `talosctl upgrade-k8s` does: server-side apply with the field manager "+
			"`talos`, objects the manifests no longer hold deleted. Needs kubeconfig. If the sync fails, the version "+
			"is not recorded and the next update syncs again.")
		an.Describe(&a.BootstrapManifests, "What the control planes render the bootstrap manifests from, one line each "+
			"(`inlineManifest cilium sha256:… objects sha256:…` (its text, and the objects it renders), `extraManifest sha256:…` (URLs as digests: one may be secret), the kube-proxy, CoreDNS and CNI settings as a digest; "+
			"talosconfig.BootstrapManifestInputs). When an update changes them without a Kubernetes upgrade (an inline manifest "+
			"edited, a URL added or removed), the update, once the cluster is healthy, syncs the bootstrap manifests as for "+
			"kubernetesVersion: Talos itself only creates missing objects, so a changed or removed manifest reaches the cluster "+
			"only this way. Needs kubeconfig. State without them records them on its next update. A refresh adds a line "+
			"`drift: <object> differs from the rendered manifests` (or `is missing from the cluster`) for each object of the "+
			"manifests that the cluster no longer holds as a control plane renders it, and `drift: <object> is no longer in the "+
			"rendered manifests (…)` for each object an earlier sync applied that they no longer hold; the next update syncs "+
			"them away (and prunes the latter, as talosctl upgrade-k8s does).")
		an.Describe(&a.Timeouts, "How long to wait for health (create and update). Default `10m`.")
		an.Describe(&a.VmIds, vmIdsDoc+" For this resource: the required nodes' VMs.")
	})
}

// ClusterHealthState is the state.
type ClusterHealthState struct {
	ClusterHealthArgs
	Nodes map[string]string `pulumi:"nodes"`
}

// Annotate documents the outputs.
func (s *ClusterHealthState) Annotate(a infer.Annotator) {
	a.Describe(&s.Nodes, "Kubernetes nodes seen at the last check, name → spec.providerID (empty without a cloud "+
		"controller manager). Empty without a kubeconfig.")
}

// Check validates the inputs.
func (*ClusterHealth) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[ClusterHealthArgs], error) {
	args, fails, err := infer.DefaultCheck[ClusterHealthArgs](ctx, req.NewInputs)
	if err != nil {
		return infer.CheckResponse[ClusterHealthArgs]{Inputs: args, Failures: fails}, err
	}

	// An unknown list (preview) is not empty; a known one must name one.
	if cps := req.NewInputs.Get("controlPlanes"); len(args.ControlPlanes) == 0 && (cps.IsNull() || cps.IsArray() && cps.AsArray().Len() == 0) {
		fails = append(fails, p.CheckFailure{Property: "controlPlanes", Reason: "at least one control plane address is " +
			"needed: list the control planes' own addresses (not the VIP), for example [\"10.0.0.11\"]"})
	}

	for i, a := range args.ControlPlanes {
		fails = append(fails, checkNodeAddress("controlPlanes["+strconv.Itoa(i)+"]", a)...)
	}

	for i, a := range args.Workers {
		fails = append(fails, checkNodeAddress("workers["+strconv.Itoa(i)+"]", a)...)
	}

	fails = append(fails, checkTimeouts(args.Timeouts)...)

	r := requiresLine(args)
	args.Requires = &r

	return infer.CheckResponse[ClusterHealthArgs]{Inputs: args, Failures: fails}, nil
}

// requiresLine says what a check requires: "3 control planes, 2 workers;
// API https://10.5.0.10:6443".
func requiresLine(a ClusterHealthArgs) string {
	line := plural(len(a.ControlPlanes), "control plane")
	if len(a.Workers) > 0 {
		line += ", " + plural(len(a.Workers), "worker")
	}

	switch {
	case a.KubernetesEndpoint != nil && *a.KubernetesEndpoint != "":
		line += "; API " + *a.KubernetesEndpoint
	case a.Kubeconfig == nil:
		line += "; no Kubernetes checks"
	}

	return line
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}

	return strconv.Itoa(n) + " " + what + "s"
}

func (r *ClusterHealth) wait(ctx context.Context, in ClusterHealthArgs, op string) (ClusterHealthState, error) {
	st := ClusterHealthState{ClusterHealthArgs: in, Nodes: map[string]string{}}

	creds, err := in.ClientConfiguration.credentials()
	if err != nil {
		return st, err
	}

	ctx, cancel, err := withTimeout(ctx, in.Timeouts, op)
	if err != nil {
		return st, err
	}
	defer cancel()

	req := talosapi.HealthRequest{
		ControlPlanes: in.ControlPlanes, Workers: in.Workers, Endpoints: in.Endpoints, Creds: creds,
		KubernetesServer: deref(in.KubernetesEndpoint), Others: in.OtherNodes,
	}
	if in.Kubeconfig != nil {
		req.Kubeconfig = []byte(*in.Kubeconfig)
	}

	rep, err := talosapi.WaitHealthy(ctx, req, withMachines(ctx, apiOptions(ctx, r.opts), in.VmIds))
	if rep != nil {
		st.Nodes = rep.Nodes
	}

	return st, err
}

// Create waits for health.
func (r *ClusterHealth) Create(ctx context.Context, req infer.CreateRequest[ClusterHealthArgs]) (infer.CreateResponse[ClusterHealthState], error) {
	id := "health"
	if len(req.Inputs.ControlPlanes) > 0 {
		id = req.Inputs.ControlPlanes[0]
	}

	if req.DryRun {
		return infer.CreateResponse[ClusterHealthState]{ID: id, Output: ClusterHealthState{ClusterHealthArgs: req.Inputs}}, nil
	}

	st, err := r.wait(ctx, req.Inputs, "create")
	if err != nil {
		return infer.CreateResponse[ClusterHealthState]{}, err
	}

	return infer.CreateResponse[ClusterHealthState]{ID: id, Output: st}, nil
}

// Diff reports every input change as an update (which checks again).
func (*ClusterHealth) Diff(_ context.Context, req infer.DiffRequest[ClusterHealthArgs, ClusterHealthState]) (infer.DiffResponse, error) {
	return diffClusterHealth(req.State.ClusterHealthArgs, req.Inputs), nil
}

func diffClusterHealth(old, in ClusterHealthArgs) infer.DiffResponse {
	dd := map[string]p.PropertyDiff{}
	upd := p.PropertyDiff{Kind: p.Update, InputDiff: true}

	// The nodes and the endpoint show as one line, requires, when it says
	// what changed; otherwise (the same counts, other addresses) as the
	// lists themselves.
	nodes := map[string]bool{
		"controlPlanes":      !equalStrings(old.ControlPlanes, in.ControlPlanes),
		"workers":            !equalStrings(old.Workers, in.Workers),
		"kubernetesEndpoint": deref(old.KubernetesEndpoint) != deref(in.KubernetesEndpoint),
	}

	changed := nodes["controlPlanes"] || nodes["workers"] || nodes["kubernetesEndpoint"]
	if changed && old.Requires != nil && in.Requires != nil && *old.Requires != *in.Requires {
		dd["requires"] = upd
	} else {
		for name, c := range nodes {
			if c {
				dd[name] = upd
			}
		}
	}

	// Nodes that come back without any input changing (VMs started after
	// being down) are checked whenever a reason is given.
	if in.Recheck != nil && *in.Recheck != "" {
		dd["recheck"] = upd
	}

	// A Kubernetes upgrade syncs the bootstrap manifests. State from before
	// this input records no version: that alone is no change (a provider
	// upgrade previews none); the next update records it.
	if deref(old.KubernetesVersion) != "" && deref(old.KubernetesVersion) != deref(in.KubernetesVersion) {
		dd["kubernetesVersion"] = upd
	}
	// So does a change of what the manifests are rendered from; state from
	// before this input records none, which is no change either.
	if manifestInputsChanged(old, in) {
		dd["bootstrapManifests"] = upd
	}

	// Credentials (a renewed certificate or kubeconfig) and otherNodes are
	// not a reason to check again: the next check uses them.
	for name, changed := range map[string]bool{
		"endpoints": !equalStrings(old.Endpoints, in.Endpoints),
		"triggers":  !equalStrings(old.Triggers, in.Triggers),
		"timeouts":  !reflect.DeepEqual(old.Timeouts, in.Timeouts),
	} {
		if changed {
			dd[name] = upd
		}
	}

	return infer.DiffResponse{HasChanges: len(dd) > 0, DetailedDiff: dd}
}

// Update waits for health again.
func (r *ClusterHealth) Update(ctx context.Context, req infer.UpdateRequest[ClusterHealthArgs, ClusterHealthState]) (infer.UpdateResponse[ClusterHealthState], error) {
	if req.DryRun {
		return infer.UpdateResponse[ClusterHealthState]{Output: ClusterHealthState{ClusterHealthArgs: req.Inputs, Nodes: req.State.Nodes}}, nil
	}

	st, err := r.wait(ctx, req.Inputs, "update")
	if err != nil {
		return infer.UpdateResponse[ClusterHealthState]{Output: req.State}, err
	}

	if manifestsDue(req.State.ClusterHealthArgs, req.Inputs) {
		creds, err := req.Inputs.ClientConfiguration.credentials()
		if err == nil {
			err = r.syncManifests(ctx, req.State.ClusterHealthArgs, req.Inputs, creds)
		}
		if err != nil {
			// The old version stays recorded, so that the next update syncs.
			return infer.UpdateResponse[ClusterHealthState]{Output: req.State}, err
		}
	}

	return infer.UpdateResponse[ClusterHealthState]{Output: st}, nil
}
