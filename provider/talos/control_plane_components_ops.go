package talos

import (
	"context"
	"fmt"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider/internal/enginelog"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// Check validates the inputs and derives the change line of an update.
func (*ControlPlaneComponents) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[ControlPlaneComponentsArgs], error) {
	args, fails, err := infer.DefaultCheck[ControlPlaneComponentsArgs](ctx, req.NewInputs)
	if err != nil || len(fails) > 0 {
		return infer.CheckResponse[ControlPlaneComponentsArgs]{Inputs: args, Failures: fails}, err
	}

	fails = append(fails, checkNodeAndEndpoints(args.Node, args.Endpoints)...)

	fails = append(fails, checkTimeouts(args.Timeouts)...)
	fails = append(fails, checkHealthGate(args.HealthGate)...)

	args.Change = nil

	if args.KubernetesVersion != "" {
		if _, err := talosconfig.ParseRelease(args.KubernetesVersion); err != nil {
			fails = append(fails, p.CheckFailure{Property: "kubernetesVersion", Reason: err.Error() + " (write it like v1.35.2)"})
		} else {
			args.Change = componentsChangeLine(req.OldInputs, args.KubernetesVersion)
		}
	}

	fails = append(fails, args.gateInputs().droppedLists(req.OldInputs, req.NewInputs)...)
	args.gateInputs().moveOut(req.NewInputs)

	return infer.CheckResponse[ControlPlaneComponentsArgs]{Inputs: args, Failures: fails}, nil
}

// componentsChangeLine is the preview's one line for an update that moves
// the components, nil on create or when the version stays.
func componentsChangeLine(oldInputs property.Map, version string) *string {
	old := oldInputs.Get("kubernetesVersion")
	if !old.IsString() || sameKubernetesVersion(old.AsString(), version) {
		return nil
	}

	line := fmt.Sprintf("control plane components %s → %s, kubelet later", vPrefixed(old.AsString()), vPrefixed(version))

	return &line
}

func sameKubernetesVersion(a, b string) bool {
	na, errA := talosconfig.NormalizeKubernetesVersion(a)
	nb, errB := talosconfig.NormalizeKubernetesVersion(b)

	return errA == nil && errB == nil && na == nb
}

func vPrefixed(v string) string {
	if strings.HasPrefix(v, "v") {
		return v
	}

	return "v" + v
}

// Diff reports only a change of kubernetesVersion: the other inputs say
// how to reach the node and are read by the next update that changes it.
func (*ControlPlaneComponents) Diff(_ context.Context, req infer.DiffRequest[ControlPlaneComponentsArgs, ControlPlaneComponentsState]) (infer.DiffResponse, error) {
	return diffControlPlaneComponents(req.State, req.Inputs), nil
}

func diffControlPlaneComponents(old ControlPlaneComponentsState, in ControlPlaneComponentsArgs) infer.DiffResponse {
	// An unknown version (preview) is a change only when the old one is set.
	if in.KubernetesVersion == "" {
		return infer.DiffResponse{}
	}
	if sameKubernetesVersion(old.KubernetesVersion, in.KubernetesVersion) {
		if old.Outcome != "" || old.KubernetesVersion == "" {
			return infer.DiffResponse{}
		}
		// The last create or update changed the node but did not see it
		// healthy (outcome ""). The engine runs the next update for its
		// init error, but a refresh drops that error (this resource has no
		// Read), so the empty outcome itself asks for the check again.
		return infer.DiffResponse{HasChanges: true, DetailedDiff: map[string]p.PropertyDiff{"outcome": {Kind: p.Update}}}
	}

	dd := map[string]p.PropertyDiff{"kubernetesVersion": {Kind: p.Update, InputDiff: true}}
	if in.Change != nil {
		dd["change"] = p.PropertyDiff{Kind: p.Add, InputDiff: true}
	}

	return infer.DiffResponse{HasChanges: true, DetailedDiff: dd}
}

// Create moves the node's components to the version when the node runs
// another one; a fresh cluster's nodes (maintenance mode, or configured
// with the version already) are not changed.
func (r *ControlPlaneComponents) Create(ctx context.Context, req infer.CreateRequest[ControlPlaneComponentsArgs]) (infer.CreateResponse[ControlPlaneComponentsState], error) {
	st := ControlPlaneComponentsState{ControlPlaneComponentsArgs: req.Inputs}
	if req.DryRun {
		return infer.CreateResponse[ControlPlaneComponentsState]{ID: req.Inputs.Node, Output: st}, nil
	}

	outcome, changed, err := r.run(ctx, req.Inputs, "create")
	st.Outcome = outcome
	st.Change = nil

	if err != nil && changed {
		st.Outcome = "" // unfinished (StageUnchanged)
		return infer.CreateResponse[ControlPlaneComponentsState]{ID: req.Inputs.Node, Output: st}, initFailed(err)
	}

	return infer.CreateResponse[ControlPlaneComponentsState]{ID: req.Inputs.Node, Output: st}, err
}

// Update moves the node's components to the new version.
func (r *ControlPlaneComponents) Update(ctx context.Context, req infer.UpdateRequest[ControlPlaneComponentsArgs, ControlPlaneComponentsState]) (infer.UpdateResponse[ControlPlaneComponentsState], error) {
	st := ControlPlaneComponentsState{ControlPlaneComponentsArgs: req.Inputs, Outcome: req.State.Outcome}
	if req.DryRun {
		return infer.UpdateResponse[ControlPlaneComponentsState]{Output: st}, nil
	}

	outcome, changed, err := r.run(ctx, req.Inputs, "update")
	st.Change = nil

	switch {
	case err != nil && changed:
		// Changed but not seen healthy: the next update checks again. The
		// engine runs it whatever Diff says (init errors), and the stack's
		// outputs, all TalosCluster reads, show it by the empty outcome
		// (StageUnchanged).
		st.Outcome = ""

		return infer.UpdateResponse[ControlPlaneComponentsState]{Output: st}, initFailed(err)
	case err != nil:
		return infer.UpdateResponse[ControlPlaneComponentsState]{Output: req.State}, err
	}

	st.Outcome = outcome

	return infer.UpdateResponse[ControlPlaneComponentsState]{Output: st}, nil
}

// run brings the node's components to the version. changed reports
// whether the node was modified, so that a later error keeps the state.
func (r *ControlPlaneComponents) run(ctx context.Context, in ControlPlaneComponentsArgs, op string) (string, bool, error) {
	t, err := nodeTarget(in.Node, in.Endpoints, in.ClientConfiguration)
	if err != nil {
		return "", false, err
	}

	ctx, cancel, err := withTimeout(ctx, in.Timeouts, op)
	if err != nil {
		return "", false, err
	}
	defer cancel()

	// The gate's lists, which the state does not keep (gate_lists.go).
	if err := in.gateInputs().putBack(in.Node); err != nil {
		return "", false, err
	}

	// One check of the nodes' VMs for the operation's waits.
	opts := withMachines(ctx, r.opts, in.VmIds)
	o := apiOptions(ctx, opts)
	log := enginelog.Logger(ctx)

	nc, mode, _, err := talosapi.ReadActiveConfig(ctx, t, o) // its text only: not the persistent one
	if err != nil {
		return "", false, fmt.Errorf("control plane components of %s: %w", nodeWho(in.Node, in.Node, err), err)
	}

	if mode == talosapi.ModeMaintenance {
		log.Infof("node %s is in maintenance mode (not configured yet): its components come with its configuration", in.Node)

		return componentsNotConfigured, false, nil
	}

	running := string(nc.Active)
	scrub := func(err error) error { return scrubError(err, running) }

	label := labelNode(in.Node, nc.Active)

	patched, change, err := talosconfig.RetagComponents(nc.Active, in.KubernetesVersion)
	if err != nil {
		return "", false, fmt.Errorf("node %s: %w", label, scrub(err))
	}

	if len(change.Paths) == 0 {
		return componentsCurrent, false, nil
	}

	gate := gateTarget{gate: in.HealthGate, node: in.Node, endpoints: in.Endpoints, cc: in.ClientConfiguration, label: label}
	if err := waitHealthGate(ctx, opts, gate, gateBefore); err != nil {
		return "", false, err
	}

	log.Infof("node %s: control plane components %s → %s (%s), kubelet kept, no reboot",
		label, change.From, vPrefixed(in.KubernetesVersion), strings.Join(change.Paths, ", "))

	res, err := talosapi.Apply(ctx, t, talosapi.ApplyRequest{Config: patched, Mode: talosapi.ApplyNoReboot}, o)
	if err != nil {
		err = scrub(err)

		return componentsUpdated, res != nil, fmt.Errorf("moving the control plane components of %s to %s: %w",
			nodeWho(in.Node, label, err), vPrefixed(in.KubernetesVersion), err)
	}

	if err := waitHealthGate(ctx, opts, gate, gateAfter); err != nil {
		return componentsUpdated, true, err
	}

	return componentsUpdated, true, nil
}
