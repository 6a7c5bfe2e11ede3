package talos

import (
	"context"
	"reflect"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"

	"github.com/proxmoxtalos/proxmoxtalos/provider/docs"
	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// Bootstrap bootstraps etcd on one control plane node, once per cluster.
type Bootstrap struct {
	opts talosapi.Options
}

// Annotate documents the resource.
func (r *Bootstrap) Annotate(a infer.Annotator) {
	a.Describe(r, docs.Description("proxmoxtalos:talos:Bootstrap"))
}

// BootstrapArgs are the inputs.
type BootstrapArgs struct {
	Node                string              `pulumi:"node"`
	Endpoints           []string            `pulumi:"endpoints,optional"`
	ClientConfiguration ClientConfiguration `pulumi:"clientConfiguration" provider:"secret"`
	Timeouts            *Timeouts           `pulumi:"timeouts,optional"`
	VmIds               map[string]int      `pulumi:"vmIds,optional"` //nolint:revive // Pulumi name
}

// Annotate documents the inputs.
func (a *BootstrapArgs) Annotate(an infer.Annotator) {
	framework.Annotate(an, a, func() {
		an.Describe(&a.Node, "The address of the control plane node to bootstrap etcd on (not the VIP).")
		an.Describe(&a.Endpoints, "Talos API endpoints to reach the node through. Default: the node itself.")
		an.Describe(&a.ClientConfiguration, "The cluster's Talos client configuration.")
		an.Describe(&a.Timeouts, "Limits for waiting on the node (create only).")
		an.Describe(&a.VmIds, vmIdsDoc)
	})
}

// BootstrapState is the state.
type BootstrapState struct {
	BootstrapArgs
	Outcome string `pulumi:"outcome"`
}

// Annotate documents the outputs.
func (s *BootstrapState) Annotate(a infer.Annotator) {
	a.Describe(&s.Outcome, "`bootstrapped` when this resource bootstrapped etcd, `already-bootstrapped` when the "+
		"node answered that etcd had been bootstrapped before.")
}

// Check validates the inputs.
func (*Bootstrap) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[BootstrapArgs], error) {
	args, fails, err := infer.DefaultCheck[BootstrapArgs](ctx, req.NewInputs)
	if err != nil {
		return infer.CheckResponse[BootstrapArgs]{Inputs: args, Failures: fails}, err
	}

	fails = append(fails, checkNodeAddress("node", args.Node)...)
	fails = append(fails, checkTimeouts(args.Timeouts)...)

	return infer.CheckResponse[BootstrapArgs]{Inputs: args, Failures: fails}, nil
}

// Create bootstraps etcd.
func (r *Bootstrap) Create(ctx context.Context, req infer.CreateRequest[BootstrapArgs]) (infer.CreateResponse[BootstrapState], error) {
	st := BootstrapState{BootstrapArgs: req.Inputs}
	if req.DryRun {
		return infer.CreateResponse[BootstrapState]{ID: req.Inputs.Node, Output: st}, nil
	}

	t, err := nodeTarget(req.Inputs.Node, req.Inputs.Endpoints, req.Inputs.ClientConfiguration)
	if err != nil {
		return infer.CreateResponse[BootstrapState]{}, err
	}

	ctx, cancel, err := withTimeout(ctx, req.Inputs.Timeouts, "create")
	if err != nil {
		return infer.CreateResponse[BootstrapState]{}, err
	}
	defer cancel()

	outcome, err := talosapi.Bootstrap(ctx, t, withMachines(ctx, apiOptions(ctx, r.opts), req.Inputs.VmIds))
	if err != nil {
		return infer.CreateResponse[BootstrapState]{}, err
	}

	st.Outcome = string(outcome)

	return infer.CreateResponse[BootstrapState]{ID: req.Inputs.Node, Output: st}, nil
}

// Diff reports input changes as in-place updates that touch nothing.
func (*Bootstrap) Diff(_ context.Context, req infer.DiffRequest[BootstrapArgs, BootstrapState]) (infer.DiffResponse, error) {
	dd := map[string]p.PropertyDiff{}
	upd := p.PropertyDiff{Kind: p.Update, InputDiff: true}

	if req.Inputs.Node != req.State.Node {
		dd["node"] = upd
	}

	if !equalStrings(req.Inputs.Endpoints, req.State.Endpoints) {
		dd["endpoints"] = upd
	}

	if req.Inputs.ClientConfiguration != req.State.ClientConfiguration {
		dd["clientConfiguration"] = upd
	}

	if !reflect.DeepEqual(req.Inputs.Timeouts, req.State.Timeouts) {
		dd["timeouts"] = upd
	}

	return infer.DiffResponse{HasChanges: len(dd) > 0, DetailedDiff: dd}, nil
}

// Update records the new inputs; etcd is bootstrapped once per cluster.
func (*Bootstrap) Update(_ context.Context, req infer.UpdateRequest[BootstrapArgs, BootstrapState]) (infer.UpdateResponse[BootstrapState], error) {
	return infer.UpdateResponse[BootstrapState]{Output: BootstrapState{BootstrapArgs: req.Inputs, Outcome: req.State.Outcome}}, nil
}
