package talos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/proxmoxtalos/proxmoxtalos/provider/internal/enginelog"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// Create applies the configuration (installing a fresh node) and upgrades
// the node when it runs another Talos version than wanted.
func (r *ConfigurationApply) Create(ctx context.Context, req infer.CreateRequest[ConfigurationApplyArgs]) (infer.CreateResponse[ConfigurationApplyState], error) {
	state, err := r.plannedState(req.Inputs, nil)
	if err != nil || req.DryRun {
		return infer.CreateResponse[ConfigurationApplyState]{ID: req.Inputs.Node, Output: state}, err
	}

	waits := req.Inputs
	if err := waits.gateInputs().putBack(nodeLabel(waits)); err != nil {
		return infer.CreateResponse[ConfigurationApplyState]{}, err
	}

	r = r.operation(ctx, waits)

	// The nodes before this one in a rollout must be healthy before it
	// joins (there is no "after" on create: the first control plane is
	// bootstrapped after its create), unless they come up with it: a new
	// cluster's nodes are configured together (healthGate.clusterCreate).
	if !waits.HealthGate.clusterCreate() {
		if err := r.waitGate(ctx, waits, gateBefore); err != nil {
			return infer.CreateResponse[ConfigurationApplyState]{}, err
		}
	}

	state, changed, err := r.reconcile(ctx, req.Inputs, nil, "create")
	if err != nil && changed {
		return infer.CreateResponse[ConfigurationApplyState]{ID: req.Inputs.Node, Output: unverified(state)}, initFailed(err)
	}

	return infer.CreateResponse[ConfigurationApplyState]{ID: req.Inputs.Node, Output: state}, err
}

// Update brings the node to the new inputs: an upgrade when the wanted
// version or installer image changed, then an apply when the node does not
// run the configuration. Changes that do not concern the node (endpoints,
// options, timeouts, a health gate's keys recorded: gateKeysAdded) only
// change the state.
func (r *ConfigurationApply) Update(ctx context.Context, req infer.UpdateRequest[ConfigurationApplyArgs, ConfigurationApplyState]) (infer.UpdateResponse[ConfigurationApplyState], error) {
	prev := req.State

	planned, err := r.plannedState(req.Inputs, &prev)
	if err != nil || req.DryRun {
		return infer.UpdateResponse[ConfigurationApplyState]{Output: planned}, err
	}

	// The gate's lists, which the state does not keep (gate_lists.go).
	waits := req.Inputs
	if err := waits.gateInputs().putBack(nodeLabel(waits)); err != nil {
		return infer.UpdateResponse[ConfigurationApplyState]{Output: prev}, err
	}

	r = r.operation(ctx, waits)

	if !needsNode(prev, req.Inputs) {
		// Endpoints, credentials (a renewed client certificate), options:
		// nothing to do on the node, which may well be powered off.
		st := prev
		st.ConfigurationApplyArgs = req.Inputs
		st.ConfigView = configView(req.Inputs.MachineConfiguration, req.Inputs.SensitiveValues)
		st.ConfigChange = nil

		// The VM restarted with new settings, or its disks moved: the
		// rollout goes on only once the cluster is healthy with the node
		// again.
		if vm := vmChange(prev.HealthGate, req.Inputs.HealthGate); vm[0] != vm[1] ||
			vmChangedByCheck(prev.HealthGate, req.Inputs, false) {
			if err := r.waitGate(ctx, waits, gateAfter); err != nil {
				return infer.UpdateResponse[ConfigurationApplyState]{Output: unverified(st)}, initFailed(err)
			}
		}

		return infer.UpdateResponse[ConfigurationApplyState]{Output: st}, nil
	}

	if err := r.waitGate(ctx, waits, gateBefore); err != nil {
		return infer.UpdateResponse[ConfigurationApplyState]{Output: prev}, err
	}

	state, changed, err := r.reconcile(ctx, req.Inputs, &prev, "update")
	if err != nil && changed {
		return infer.UpdateResponse[ConfigurationApplyState]{Output: unverified(state)}, initFailed(err)
	}

	if err != nil {
		return infer.UpdateResponse[ConfigurationApplyState]{Output: prev}, err
	}

	state.ConfigChange = nil

	// A failed wait leaves the state unverified: the next update checks the
	// node and waits again before the rollout goes on.
	if err := r.waitGate(ctx, waits, gateAfter); err != nil {
		return infer.UpdateResponse[ConfigurationApplyState]{Output: unverified(state)}, initFailed(err)
	}

	return infer.UpdateResponse[ConfigurationApplyState]{Output: state}, nil
}

// operation is the resource for one create or update: its waits (gate,
// apply, upgrade, reboot) share one check of the nodes' VMs (vmIds).
func (r *ConfigurationApply) operation(ctx context.Context, in ConfigurationApplyArgs) *ConfigurationApply {
	return &ConfigurationApply{opts: withMachines(ctx, r.opts, in.VmIds)}
}

// needsNode reports whether an update has work on the node: another
// configuration, version or installer image, or a previous operation that
// did not finish (its digest was cleared).
func needsNode(prev ConfigurationApplyState, in ConfigurationApplyArgs) bool {
	digest, err := talosapi.ConfigDigest([]byte(in.MachineConfiguration))
	if err != nil || prev.ConfigDigest == "" || digest != prev.ConfigDigest {
		return true
	}

	want, image := desiredVersion(in)

	return (want != "" && !sameTalosVersion(want, prev.RunningVersion)) ||
		(image != "" && prev.InstalledImage != "" && image != prev.InstalledImage)
}

// unverified marks the state of an operation that changed the node but did
// not see it finish: the next update checks the node again.
func unverified(st ConfigurationApplyState) ConfigurationApplyState {
	st.ConfigDigest = ""

	return st
}

// initFailed keeps the state of a node that was changed before the error,
// so that the next update resumes (Pulumi updates resources with init
// errors even without changes).
func initFailed(err error) error {
	return infer.ResourceInitFailedError{Reasons: []string{err.Error()}}
}

// plannedState is the state the inputs lead to, computed without contacting
// the node (for previews and as the base of reconcile).
func (r *ConfigurationApply) plannedState(in ConfigurationApplyArgs, prev *ConfigurationApplyState) (ConfigurationApplyState, error) {
	st := ConfigurationApplyState{ConfigurationApplyArgs: in}
	st.ConfigView = configView(in.MachineConfiguration, in.SensitiveValues)

	if prev != nil {
		st.ConfigDigest, st.InstalledImage, st.RunningVersion, st.AppliedMode = prev.ConfigDigest, prev.InstalledImage, prev.RunningVersion, prev.AppliedMode
	}

	if in.MachineConfiguration == "" {
		return st, nil // unknown during preview
	}

	digest, err := talosapi.ConfigDigest([]byte(in.MachineConfiguration))
	if err != nil {
		return st, err
	}

	st.ConfigDigest = digest

	if v, image := desiredVersion(in); v != "" {
		st.RunningVersion = v
		st.InstalledImage = image
	}

	return st, nil
}

// reconcile makes the node run the inputs. changed reports whether the node
// was modified, so that a later error keeps the state.
func (r *ConfigurationApply) reconcile(ctx context.Context, in ConfigurationApplyArgs, prev *ConfigurationApplyState, op string) (ConfigurationApplyState, bool, error) {
	st := ConfigurationApplyState{ConfigurationApplyArgs: in}
	st.ConfigView = configView(in.MachineConfiguration, in.SensitiveValues)

	if prev != nil {
		st.InstalledImage, st.RunningVersion, st.AppliedMode, st.ConfigDigest = prev.InstalledImage, prev.RunningVersion, prev.AppliedMode, prev.ConfigDigest
	}

	t, err := nodeTarget(in.Node, in.Endpoints, in.ClientConfiguration)
	if err != nil {
		return st, false, err
	}

	ctx, cancel, err := withTimeout(ctx, in.Timeouts, op)
	if err != nil {
		return st, false, err
	}
	defer cancel()

	run := reconcileRun{t: t, o: apiOptions(ctx, r.opts), in: in, cfg: []byte(in.MachineConfiguration), mode: modeOf(in.ApplyMode)}
	run.wantVersion, run.image = desiredVersion(in)

	if run.digest, err = talosapi.ConfigDigest(run.cfg); err != nil {
		return st, false, err
	}

	conn, err := talosapi.Connect(ctx, t, run.o)
	if err != nil {
		return st, false, err
	}

	nodeMode, nodeVersion := conn.Mode, conn.Version()
	_ = conn.Close() // only asked which mode and version the node runs

	changed := false

	if nodeMode == talosapi.ModeMaintenance {
		// A node created with its cluster is given its configuration, as
		// `talosctl apply-config --insecure` does, and not waited for: the
		// bootstrap and the cluster's health check wait for it.
		together := prev == nil && in.HealthGate.clusterCreate()

		installed, version, err := run.install(ctx, &st, together)
		if err != nil || together {
			return st, installed, err
		}

		changed, nodeVersion = installed, version
	}

	// Upgrade first: a configuration for the new version may use keys the
	// old version refuses.
	if upgrade, evenIfSame := needsUpgrade(prev, run.image, run.wantVersion, nodeVersion, nodeMode); upgrade {
		accepted, err := run.upgrade(ctx, &st, nodeVersion, evenIfSame)
		changed = changed || accepted

		if err != nil {
			return st, changed, err
		}
	}

	if nodeMode == talosapi.ModeSecure {
		applied, err := run.applyIfDifferent(ctx, &st, prev == nil)
		changed = changed || applied

		if err != nil {
			return st, changed, err
		}
	}

	if st.InstalledImage == "" {
		st.InstalledImage = run.image
	}

	return st, changed, nil
}

// reconcileRun is what one reconcile brings to the node: how to reach it, and
// the configuration, apply mode and Talos version it should run.
type reconcileRun struct {
	t                  talosapi.Target
	o                  talosapi.Options
	in                 ConfigurationApplyArgs
	cfg                []byte
	mode               talosapi.ApplyMode
	wantVersion, image string
	digest             string
}

// scrub takes the configuration's values out of a node's error.
func (run reconcileRun) scrub(err error) error {
	return scrubError(err, run.in.MachineConfiguration, run.in.SensitiveValues...)
}

// needsUpgrade is the pure decision to call the Upgrade API: the node runs
// another Talos version than the inputs ask for, or (on a configured node)
// the installer image changed with the version kept, which is an upgrade
// to the same version.
func needsUpgrade(prev *ConfigurationApplyState, image, wantVersion, nodeVersion string, nodeMode talosapi.Mode) (upgrade, evenIfSameVersion bool) {
	if image == "" {
		return false, false
	}

	imageChanged := prev != nil && prev.InstalledImage != "" && prev.InstalledImage != image && nodeMode == talosapi.ModeSecure
	versionChanged := wantVersion != "" && nodeVersion != "" && !sameTalosVersion(wantVersion, nodeVersion)

	return versionChanged || imageChanged, imageChanged
}

// install gives a node in maintenance mode its configuration; with noWait it
// returns once the node accepted it. installed reports whether the node took
// it; version is the Talos version the node then runs ("" when not verified).
func (run reconcileRun) install(ctx context.Context, st *ConfigurationApplyState, noWait bool) (installed bool, version string, err error) {
	res, err := talosapi.Apply(ctx, run.t, talosapi.ApplyRequest{Config: run.cfg, Mode: run.mode, TryTimeout: tryTimeout(run.in), NoWait: noWait}, run.o)
	if res != nil {
		installed = true
		st.ConfigDigest, st.AppliedMode, st.InstalledImage = res.Digest, "install", run.image
		st.RunningVersion = res.Version

		if res.Version == "" {
			// Not verified yet (a worker before bootstrap): the node
			// installed the configuration's installer image.
			st.RunningVersion = run.wantVersion
		}
	}

	if err != nil {
		return installed, "", run.scrub(err)
	}

	if noWait {
		// It installs the configuration's installer image.
		st.RunningVersion, st.InstalledImage = run.wantVersion, run.image

		return installed, "", nil
	}

	return installed, res.Version, nil
}

// upgrade moves the node to the inputs' installer image; accepted reports
// whether the node took the request (and so was modified).
func (run reconcileRun) upgrade(ctx context.Context, st *ConfigurationApplyState, nodeVersion string, evenIfSameVersion bool) (accepted bool, err error) {
	up := run.in.Upgrade
	res, err := talosapi.Upgrade(ctx, run.t, talosapi.UpgradeRequest{
		Image: run.image, Version: versionOr(run.wantVersion, nodeVersion),
		Stage: up != nil && boolOr(up.Stage, false), Preserve: up != nil && boolOr(up.Preserve, false),
		EvenIfSameVersion: evenIfSameVersion,
	}, run.o)
	accepted = res != nil && res.Accepted

	if err != nil {
		return accepted, err
	}

	st.InstalledImage, st.RunningVersion = run.image, res.To

	return accepted, nil
}

// applyIfDifferent applies the configuration to a configured node unless it
// already runs it (or, for a staged apply, has it staged); applied reports
// whether the node was given it.
func (run reconcileRun) applyIfDifferent(ctx context.Context, st *ConfigurationApplyState, first bool) (applied bool, err error) {
	nc, _, version, err := talosapi.ReadConfigFor(ctx, run.t, run.o, run.mode)
	if err != nil {
		return false, err
	}

	st.RunningVersion = version

	current := nc.ActiveDigest
	if run.mode == talosapi.ApplyStaged {
		current = nc.PersistentDigest
	}

	if current == run.digest {
		st.ConfigDigest = run.digest
		if first {
			st.AppliedMode = "none"
		}

		return false, nil
	}

	res, err := talosapi.Apply(ctx, run.t, talosapi.ApplyRequest{Config: run.cfg, Mode: run.mode, TryTimeout: tryTimeout(run.in), Running: nc.Active}, run.o)
	if res != nil {
		applied = true
		st.ConfigDigest, st.AppliedMode = res.Digest, string(res.Applied)
	}

	if err != nil {
		return applied, run.scrub(err)
	}

	if len(res.Pending) > 0 {
		enginelog.Logger(ctx).Warning(pendingWarning(nodeLabel(run.in), run.t.Node, res))
	}

	if res.Version != "" {
		st.RunningVersion = res.Version
	}

	return applied, nil
}

// pendingWarning says that a node applied a change without the reboot it
// takes effect at, and how to reboot it now; for mode try, that the change
// never takes effect (res.Pending).
func pendingWarning(label, node string, res *talosapi.ApplyResult) string {
	paths := strings.Join(res.Pending, ", ")
	if res.Applied == talosapi.ApplyTry {
		return fmt.Sprintf("node %s runs Talos %s, which applied the configuration in try mode without a reboot: changes to %s take "+
			"effect only at a reboot, and a try configuration is not saved (a reboot boots the saved one, and it is rolled back after "+
			"tryTimeout), so they do not take effect. To keep them, set applyMode: reboot, or apply with applyMode: auto and reboot "+
			"the node with `talosctl -n %s reboot`", label, res.Version, paths, node)
	}

	return fmt.Sprintf("node %s runs Talos %s, which applied the configuration without a reboot: changes to %s take effect only at "+
		"the node's next reboot. Reboot it now with `talosctl -n %s reboot`, or set applyMode: reboot to have the update reboot it",
		label, res.Version, paths, node)
}

// scrubError replaces secret values of the configuration that a node's
// error message might quote.
func scrubError(err error, configYAML string, extra ...string) error {
	if err == nil {
		return nil
	}

	msg := err.Error()
	changed := false

	for _, s := range append(talosconfig.SensitiveValues(configYAML), extra...) {
		if len(s) >= 4 && strings.Contains(msg, s) {
			msg = strings.ReplaceAll(msg, s, "(sensitive)")
			changed = true
		}
	}

	if !changed {
		return err
	}

	return errors.New(msg)
}

func tryTimeout(in ConfigurationApplyArgs) time.Duration {
	if in.TryTimeout == nil {
		return 0
	}

	d, _ := time.ParseDuration(*in.TryTimeout) //nolint:errcheck // validated in Check

	return d
}

func boolOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}

	return *b
}

func versionOr(v, fallback string) string {
	if v != "" {
		return v
	}

	return fallback
}
