package talos

import (
	"context"
	"errors"
	"strings"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

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

	// The nodes before this one in a rollout must be healthy before it
	// joins (there is no "after" on create: the first control plane is
	// bootstrapped after its create), unless they come up with it: a new
	// cluster's nodes are configured together (healthGate.clusterCreate).
	if !req.Inputs.HealthGate.clusterCreate() {
		if err := r.waitGate(ctx, req.Inputs, gateBefore); err != nil {
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
// options, timeouts) only change the state.
func (r *ConfigurationApply) Update(ctx context.Context, req infer.UpdateRequest[ConfigurationApplyArgs, ConfigurationApplyState]) (infer.UpdateResponse[ConfigurationApplyState], error) {
	prev := req.State

	planned, err := r.plannedState(req.Inputs, &prev)
	if err != nil || req.DryRun {
		return infer.UpdateResponse[ConfigurationApplyState]{Output: planned}, err
	}

	if !needsNode(prev, req.Inputs) {
		// Endpoints, credentials (a renewed client certificate), options:
		// nothing to do on the node, which may well be powered off.
		st := prev
		st.ConfigurationApplyArgs = req.Inputs
		st.ConfigView = configView(req.Inputs.MachineConfiguration, req.Inputs.SensitiveValues)
		st.ConfigChange = nil

		// The VM restarted with new settings: the rollout goes on only
		// once the cluster is healthy with the node again.
		if vm := vmRestart(prev.HealthGate, req.Inputs.HealthGate); vm[0] != vm[1] {
			if err := r.waitGate(ctx, req.Inputs, gateAfter); err != nil {
				return infer.UpdateResponse[ConfigurationApplyState]{Output: unverified(st)}, initFailed(err)
			}
		}

		return infer.UpdateResponse[ConfigurationApplyState]{Output: st}, nil
	}

	if err := r.waitGate(ctx, req.Inputs, gateBefore); err != nil {
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
	if err := r.waitGate(ctx, req.Inputs, gateAfter); err != nil {
		return infer.UpdateResponse[ConfigurationApplyState]{Output: unverified(state)}, initFailed(err)
	}

	return infer.UpdateResponse[ConfigurationApplyState]{Output: state}, nil
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

	o := apiOptions(ctx, r.opts)
	cfg := []byte(in.MachineConfiguration)
	mode := modeOf(in.ApplyMode)
	wantVersion, image := desiredVersion(in)

	digest, err := talosapi.ConfigDigest(cfg)
	if err != nil {
		return st, false, err
	}

	scrub := func(err error) error { return scrubError(err, in.MachineConfiguration, in.SensitiveValues...) }

	conn, err := talosapi.Connect(ctx, t, o)
	if err != nil {
		return st, false, err
	}

	nodeMode, nodeVersion := conn.Mode, conn.Version()
	conn.Close() //nolint:errcheck

	changed := false

	// A node created with its cluster is given its configuration, as
	// `talosctl apply-config --insecure` does, and not waited for: the
	// bootstrap and the cluster's health check wait for it.
	together := prev == nil && in.HealthGate.clusterCreate()

	if nodeMode == talosapi.ModeMaintenance {
		res, err := talosapi.Apply(ctx, t, talosapi.ApplyRequest{Config: cfg, Mode: mode, TryTimeout: tryTimeout(in), NoWait: together}, o)
		if res != nil {
			changed = true
			st.ConfigDigest, st.AppliedMode, st.InstalledImage = res.Digest, "install", image
			st.RunningVersion = res.Version

			if res.Version == "" {
				// Not verified yet (a worker before bootstrap): the node
				// installed the configuration's installer image.
				st.RunningVersion = wantVersion
			}
		}

		if err != nil {
			return st, changed, scrub(err)
		}

		if together {
			// It installs the configuration's installer image.
			st.RunningVersion, st.InstalledImage = wantVersion, image

			return st, changed, nil
		}

		nodeVersion = res.Version
	}

	// Upgrade first: a configuration for the new version may use keys the
	// old version refuses.
	imageChanged := prev != nil && prev.InstalledImage != "" && image != "" && prev.InstalledImage != image && nodeMode == talosapi.ModeSecure
	if image != "" && ((wantVersion != "" && nodeVersion != "" && !sameTalosVersion(wantVersion, nodeVersion)) || imageChanged) {
		res, err := talosapi.Upgrade(ctx, t, talosapi.UpgradeRequest{
			Image: image, Version: versionOr(wantVersion, nodeVersion),
			Stage: in.Upgrade != nil && boolOr(in.Upgrade.Stage, false), Preserve: in.Upgrade != nil && boolOr(in.Upgrade.Preserve, false),
			EvenIfSameVersion: imageChanged,
		}, o)
		if res != nil && res.Accepted {
			changed = true
		}

		if err != nil {
			return st, changed, err
		}

		st.InstalledImage, st.RunningVersion = image, res.To
	}

	if nodeMode == talosapi.ModeSecure {
		nc, _, version, err := talosapi.ReadConfig(ctx, t, o)
		if err != nil {
			return st, changed, err
		}

		st.RunningVersion = version

		current := nc.ActiveDigest
		if mode == talosapi.ApplyStaged {
			current = nc.PersistentDigest
		}

		if current == digest {
			st.ConfigDigest = digest
			if prev == nil {
				st.AppliedMode = "none"
			}
		} else {
			res, err := talosapi.Apply(ctx, t, talosapi.ApplyRequest{Config: cfg, Mode: mode, TryTimeout: tryTimeout(in)}, o)
			if res != nil {
				changed = true
				st.ConfigDigest, st.AppliedMode = res.Digest, string(res.Applied)
			}

			if err != nil {
				return st, changed, scrub(err)
			}

			if res.Version != "" {
				st.RunningVersion = res.Version
			}
		}
	}

	if st.InstalledImage == "" {
		st.InstalledImage = image
	}

	return st, changed, nil
}

// Read reports what the node runs. Drift shows as a changed configuration
// (and configView) or version in the state; a node back in maintenance mode
// drops out of the state; an unreachable node keeps its state with a
// warning.
func (r *ConfigurationApply) Read(ctx context.Context, req infer.ReadRequest[ConfigurationApplyArgs, ConfigurationApplyState]) (infer.ReadResponse[ConfigurationApplyArgs, ConfigurationApplyState], error) {
	st := req.State
	keep := infer.ReadResponse[ConfigurationApplyArgs, ConfigurationApplyState]{ID: req.ID, Inputs: req.Inputs, State: st}

	t, err := nodeTarget(st.Node, st.Endpoints, st.ClientConfiguration)
	if err != nil {
		return keep, err
	}

	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()

	o := apiOptions(ctx, r.opts)

	nc, mode, version, err := talosapi.ReadConfig(ctx, t, o)
	if err != nil {
		p.GetLogger(ctx).Warningf("node %s could not be read, its state is kept: %s", st.Node, err)

		return keep, nil
	}

	if mode == talosapi.ModeMaintenance {
		p.GetLogger(ctx).Warningf("node %s is in maintenance mode (reset outside Pulumi): the configuration will be applied again", st.Node)

		return infer.ReadResponse[ConfigurationApplyArgs, ConfigurationApplyState]{}, nil
	}

	st.RunningVersion = version

	current := nc.ActiveDigest
	if modeOf(st.ApplyMode) == talosapi.ApplyStaged && nc.PersistentDigest != "" {
		current = nc.PersistentDigest
	}

	if current != st.ConfigDigest && modeOf(st.ApplyMode) != talosapi.ApplyStaged {
		st.MachineConfiguration = string(nc.Active)
		st.ConfigDigest = nc.ActiveDigest

		st.ConfigView = configView(st.MachineConfiguration, st.SensitiveValues)
	} else if current != st.ConfigDigest {
		st.ConfigDigest = current
	}

	return infer.ReadResponse[ConfigurationApplyArgs, ConfigurationApplyState]{ID: req.ID, Inputs: req.Inputs, State: st}, nil
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
