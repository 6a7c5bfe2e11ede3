package talos

import (
	"context"
	"fmt"
	"reflect"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/proxmoxtalos/proxmoxtalos/provider/internal/enginelog"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"

	"github.com/proxmoxtalos/proxmoxtalos/provider/docs"
	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// Kubeconfig is an admin kubeconfig issued by a control plane node.
type Kubeconfig struct {
	opts talosapi.Options
	// now is the clock for renewal decisions; tests set it.
	now func() time.Time
}

// Annotate documents the resource.
func (r *Kubeconfig) Annotate(a infer.Annotator) {
	a.Describe(r, docs.Description("proxmoxtalos:talos:Kubeconfig"))
}

// KubeconfigArgs are the inputs.
type KubeconfigArgs struct {
	Node                string              `pulumi:"node"`
	Endpoints           []string            `pulumi:"endpoints,optional"`
	ClientConfiguration ClientConfiguration `pulumi:"clientConfiguration" provider:"secret"`
	KubernetesEndpoint  *string             `pulumi:"kubernetesEndpoint,optional"`
	RenewBefore         *string             `pulumi:"renewBefore,optional"`
	Timeouts            *Timeouts           `pulumi:"timeouts,optional"`
	VmIds               map[string]int      `pulumi:"vmIds,optional"` //nolint:revive // Pulumi name
}

// Annotate documents the inputs.
func (a *KubeconfigArgs) Annotate(an infer.Annotator) {
	framework.Annotate(an, a, func() {
		an.Describe(&a.Node, "The address of a control plane node to ask for the kubeconfig.")
		an.Describe(&a.Endpoints, "Talos API endpoints to reach the node through. Default: the node itself.")
		an.Describe(&a.ClientConfiguration, "The cluster's Talos client configuration.")
		an.Describe(&a.KubernetesEndpoint, "The Kubernetes API URL to write into the kubeconfig, like "+
			"`https://192.168.1.220:6443` (a host alone gets https and port 6443). Default: the cluster endpoint of "+
			"the node's configuration. Changing it rewrites the kubeconfig without contacting the node.")
		an.Describe(&a.RenewBefore, "Fetch a new kubeconfig in a later update when the client certificate expires "+
			"within this Go duration. Default `720h` (30 days).")
		an.Describe(&a.Timeouts, "Limits for waiting on the node.")
		an.Describe(&a.VmIds, vmIdsDoc)
	})
}

// KubeconfigState is the state.
type KubeconfigState struct {
	KubeconfigArgs
	KubeconfigRaw string `pulumi:"kubeconfig" provider:"secret"`
	Server        string `pulumi:"server"`
	ClusterName   string `pulumi:"clusterName"`
	ExpiresAt     string `pulumi:"expiresAt"`
}

// WireDependencies marks the kubeconfig secret: infer v1.5.0 marks an output
// secret only when it echoes a secret input or is wired AlwaysSecret, not for
// its provider:"secret" tag (that tag only reaches the schema), so without
// this the kubeconfig is stored in plain text in the state of programs whose
// SDK does not add the schema's secret outputs itself (the Go SDK, and so the
// TalosCluster component).
func (*Kubeconfig) WireDependencies(f infer.FieldSelector, _ *KubeconfigArgs, state *KubeconfigState) {
	f.OutputField(&state.KubeconfigRaw).AlwaysSecret()
}

// Annotate documents the outputs.
func (s *KubeconfigState) Annotate(a infer.Annotator) {
	framework.Annotate(a, s, func() {
		a.Describe(&s.KubeconfigRaw, "The admin kubeconfig (YAML).")
		a.Describe(&s.Server, "The Kubernetes API URL the kubeconfig points at.")
		a.Describe(&s.ClusterName, "The cluster name in the kubeconfig.")
		a.Describe(&s.ExpiresAt, "When the client certificate expires (RFC 3339, UTC).")
	})
}

const defaultRenewBefore = 30 * 24 * time.Hour

func renewBefore(s *string) (time.Duration, error) {
	if s == nil || *s == "" {
		return defaultRenewBefore, nil
	}

	d, err := time.ParseDuration(*s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("renewBefore %q is not a Go duration like 720h", *s)
	}

	return d, nil
}

// Check validates the inputs.
func (*Kubeconfig) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[KubeconfigArgs], error) {
	args, fails, err := infer.DefaultCheck[KubeconfigArgs](ctx, req.NewInputs)
	if err != nil {
		return infer.CheckResponse[KubeconfigArgs]{Inputs: args, Failures: fails}, err
	}

	fails = append(fails, checkNodeAddress("node", args.Node)...)
	fails = append(fails, checkTimeouts(args.Timeouts)...)

	if _, err := renewBefore(args.RenewBefore); err != nil {
		fails = append(fails, p.CheckFailure{Property: "renewBefore", Reason: err.Error()})
	}

	if args.KubernetesEndpoint != nil && *args.KubernetesEndpoint != "" {
		if _, err := talosapi.KubernetesEndpoint(*args.KubernetesEndpoint); err != nil {
			fails = append(fails, p.CheckFailure{Property: "kubernetesEndpoint", Reason: err.Error()})
		}
	}

	return infer.CheckResponse[KubeconfigArgs]{Inputs: args, Failures: fails}, nil
}

func (r *Kubeconfig) clock() time.Time {
	if r.now != nil {
		return r.now()
	}

	return time.Now()
}

// fetch asks the node for a kubeconfig.
func (r *Kubeconfig) fetch(ctx context.Context, in KubeconfigArgs, op string) (KubeconfigState, error) {
	st := KubeconfigState{KubeconfigArgs: in}

	t, err := nodeTarget(in.Node, in.Endpoints, in.ClientConfiguration)
	if err != nil {
		return st, err
	}

	ctx, cancel, err := withTimeout(ctx, in.Timeouts, op)
	if err != nil {
		return st, err
	}
	defer cancel()

	kc, err := talosapi.FetchKubeconfig(ctx, t, deref(in.KubernetesEndpoint), withMachines(ctx, apiOptions(ctx, r.opts), in.VmIds))
	if err != nil {
		return st, err
	}

	st.fill(kc.Raw, kc.Info)

	return st, nil
}

func (s *KubeconfigState) fill(raw []byte, info *talosapi.KubeconfigInfo) {
	s.KubeconfigRaw = string(raw)
	s.Server = info.Server
	s.ClusterName = info.ClusterName
	s.ExpiresAt = info.NotAfter.UTC().Format(time.RFC3339)
}

// Create fetches the kubeconfig.
func (r *Kubeconfig) Create(ctx context.Context, req infer.CreateRequest[KubeconfigArgs]) (infer.CreateResponse[KubeconfigState], error) {
	if req.DryRun {
		return infer.CreateResponse[KubeconfigState]{ID: req.Inputs.Node, Output: KubeconfigState{KubeconfigArgs: req.Inputs}}, nil
	}

	st, err := r.fetch(ctx, req.Inputs, "create")
	if err != nil {
		return infer.CreateResponse[KubeconfigState]{}, err
	}

	return infer.CreateResponse[KubeconfigState]{ID: req.Inputs.Node, Output: st}, nil
}

// renewalDue reports whether the certificate expires within renewBefore.
func renewalDue(st KubeconfigState, in KubeconfigArgs, now time.Time) bool {
	exp, err := time.Parse(time.RFC3339, st.ExpiresAt)
	if err != nil {
		return true
	}

	window, err := renewBefore(in.RenewBefore)
	if err != nil {
		return false
	}

	return !now.Add(window).Before(exp)
}

// Diff reports input changes and a due renewal.
func (r *Kubeconfig) Diff(ctx context.Context, req infer.DiffRequest[KubeconfigArgs, KubeconfigState]) (infer.DiffResponse, error) {
	d := diffKubeconfig(req.State, req.Inputs, r.clock())

	if _, ok := d.DetailedDiff["kubeconfig"]; ok {
		enginelog.Logger(ctx).Infof("the cluster CA in clientConfiguration changed: a new kubeconfig will be fetched from node %s", req.Inputs.Node)
	}

	if _, ok := d.DetailedDiff["expiresAt"]; ok {
		enginelog.Logger(ctx).Infof("the kubeconfig's client certificate expires at %s, within renewBefore: a new kubeconfig will be fetched from node %s", req.State.ExpiresAt, req.Inputs.Node)
	}

	return d, nil
}

func diffKubeconfig(st KubeconfigState, in KubeconfigArgs, now time.Time) infer.DiffResponse {
	dd := map[string]p.PropertyDiff{}
	upd := p.PropertyDiff{Kind: p.Update, InputDiff: true}

	for name, changed := range map[string]bool{
		"node":                in.Node != st.Node,
		"endpoints":           !equalStrings(in.Endpoints, st.Endpoints),
		"clientConfiguration": in.ClientConfiguration != st.ClientConfiguration,
		"kubernetesEndpoint":  deref(in.KubernetesEndpoint) != deref(st.KubernetesEndpoint),
		"renewBefore":         deref(in.RenewBefore) != deref(st.RenewBefore),
		"timeouts":            !reflect.DeepEqual(in.Timeouts, st.Timeouts),
	} {
		if changed {
			dd[name] = upd
		}
	}

	if renewalDue(st, in, now) {
		dd["expiresAt"] = p.PropertyDiff{Kind: p.Update}
	}

	if caChanged(st, in) {
		dd["kubeconfig"] = p.PropertyDiff{Kind: p.Update}
	}

	return infer.DiffResponse{HasChanges: len(dd) > 0, DetailedDiff: dd}
}

// caChanged reports another cluster CA in the client configuration: a new
// cluster (new machine secrets) whose nodes no longer trust the stored
// kubeconfig's certificate, so it is fetched again. An unknown client
// configuration (preview) compares as no change here.
func caChanged(st KubeconfigState, in KubeconfigArgs) bool {
	return st.ClientConfiguration.CACertificate != "" && in.ClientConfiguration.CACertificate != "" &&
		st.ClientConfiguration.CACertificate != in.ClientConfiguration.CACertificate
}

// Update fetches a new kubeconfig when the certificate is due for renewal or
// the cluster CA changed,
// rewrites the server when only kubernetesEndpoint changed, and otherwise
// keeps the kubeconfig.
func (r *Kubeconfig) Update(ctx context.Context, req infer.UpdateRequest[KubeconfigArgs, KubeconfigState]) (infer.UpdateResponse[KubeconfigState], error) {
	in, old := req.Inputs, req.State

	st := old
	st.KubeconfigArgs = in

	if req.DryRun {
		return infer.UpdateResponse[KubeconfigState]{Output: st}, nil
	}

	endpointChanged := deref(in.KubernetesEndpoint) != deref(old.KubernetesEndpoint)

	// A removed kubernetesEndpoint means the node's own endpoint: ask it.
	if renewalDue(old, in, r.clock()) || caChanged(old, in) || old.KubeconfigRaw == "" || (endpointChanged && deref(in.KubernetesEndpoint) == "") {
		fresh, err := r.fetch(ctx, in, "update")
		if err != nil {
			return infer.UpdateResponse[KubeconfigState]{Output: old}, err
		}

		return infer.UpdateResponse[KubeconfigState]{Output: fresh}, nil
	}

	if endpointChanged {
		server, err := talosapi.KubernetesEndpoint(*in.KubernetesEndpoint)
		if err != nil {
			return infer.UpdateResponse[KubeconfigState]{Output: old}, err
		}

		raw, err := talosapi.RewriteServer([]byte(old.KubeconfigRaw), server)
		if err != nil {
			return infer.UpdateResponse[KubeconfigState]{Output: old}, err
		}

		info, err := talosapi.ParseKubeconfig(raw)
		if err != nil {
			return infer.UpdateResponse[KubeconfigState]{Output: old}, err
		}

		st.fill(raw, info)
	}

	return infer.UpdateResponse[KubeconfigState]{Output: st}, nil
}
