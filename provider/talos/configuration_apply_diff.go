package talos

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
	"github.com/proxmoxtalos/proxmoxtalos/provider/internal/enginelog"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// Check validates the inputs and derives configView, the redacted view of
// the configuration that lets previews name the paths that change.
func (*ConfigurationApply) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[ConfigurationApplyArgs], error) {
	args, fails, err := framework.DecodeInputs[ConfigurationApplyArgs](ctx, req.NewInputs)
	if err != nil || len(fails) > 0 {
		return infer.CheckResponse[ConfigurationApplyArgs]{Inputs: args, Failures: fails}, err
	}

	fails = append(fails, checkNodeAndEndpoints(args.Node, args.Endpoints)...)

	if args.Reset != nil {
		for i, cp := range args.Reset.ControlPlanes {
			fails = append(fails, checkNodeAddress(fmt.Sprintf("reset.controlPlanes[%d]", i), cp)...)
		}
	}

	fails = append(fails, checkTimeouts(args.Timeouts)...)

	if args.ApplyMode != nil {
		if _, err := talosapi.ParseApplyMode(string(*args.ApplyMode)); err != nil {
			fails = append(fails, p.CheckFailure{Property: "applyMode", Reason: err.Error()})
		}
	}

	if args.TryTimeout != nil {
		if d, err := time.ParseDuration(*args.TryTimeout); err != nil || d <= 0 {
			fails = append(fails, p.CheckFailure{Property: "tryTimeout", Reason: fmt.Sprintf("%q is not a positive Go duration like 1m or 90s", *args.TryTimeout)})
		}
	}

	if args.TalosVersion != nil && *args.TalosVersion != "" {
		if _, err := talosconfig.ParseRelease(*args.TalosVersion); err != nil {
			fails = append(fails, p.CheckFailure{Property: "talosVersion", Reason: err.Error()})
		}
	}

	args.ConfigView, args.ConfigChange = nil, nil

	fails = append(fails, checkHealthGate(args.HealthGate)...)

	if args.MachineConfiguration != "" && sameConfiguration(req.OldInputs, args) {
		// Accepted before as it is (sameConfiguration): nothing to validate
		// again, and no view to show, since Diff lists no changed path; the
		// VM's restart (healthGate.vm) still has its line.
		args.ConfigChange = deriveConfigChange(req.OldInputs, args)
	} else if args.MachineConfiguration != "" {
		// Validated the way a nocloud node validates it on apply (cloud mode:
		// the install section is checked by the node against its disks).
		if _, err := talosconfig.Validate(args.MachineConfiguration, talosconfig.Cloud, validationVersion(args)); err != nil {
			fails = append(fails, p.CheckFailure{Property: "machineConfiguration", Reason: err.Error()})
		} else if f := checkVersionMatchesImage(args); f != nil {
			fails = append(fails, *f)
		} else if req.OldInputs.Len() > 0 {
			// Only for updates: the view lets the preview list changed
			// paths; on create it would print the whole configuration.
			args.ConfigView = configView(args.MachineConfiguration, args.SensitiveValues)
			args.ConfigChange = deriveConfigChange(req.OldInputs, args)
		}
	}

	// A new machine at the address: marked here, where the old inputs are at
	// hand, for Diff and the preview's configChange line.
	if newMachine(req.OldInputs, req.NewInputs) {
		line := newMachineChange
		args.ConfigChange = &line
	}

	fails = append(fails, args.gateInputs().droppedLists(req.OldInputs, req.NewInputs)...)
	args.gateInputs().moveOut(req.NewInputs)

	return infer.CheckResponse[ConfigurationApplyArgs]{Inputs: args, Failures: fails}, nil
}

// sameConfiguration reports a configuration the last accepted inputs (the
// old inputs) had as it is: the same text, talosVersion and sensitiveValues.
// Check validated it then for the same Talos version, and an update that
// keeps it applies nothing, so a no-op preview does not parse and validate
// every node's configuration again. Diff still compares it with the digest
// of what the node runs (the state), and any change of the text or of those
// inputs is checked in full.
func sameConfiguration(oldInputs property.Map, args ConfigurationApplyArgs) bool {
	if oldInputs.Len() == 0 {
		return false
	}
	if cfg := oldInputs.Get("machineConfiguration"); !cfg.IsString() || cfg.AsString() != args.MachineConfiguration {
		return false
	}
	var oldVersion string
	if v := oldInputs.Get("talosVersion"); v.IsString() {
		oldVersion = v.AsString()
	} else if !v.IsNull() {
		return false
	}
	if args.TalosVersion == nil && oldVersion != "" || args.TalosVersion != nil && *args.TalosVersion != oldVersion {
		return false
	}
	var oldSensitive []string
	if v := oldInputs.Get("sensitiveValues"); v.IsArray() {
		for _, e := range v.AsArray().All {
			if !e.IsString() {
				return false
			}
			oldSensitive = append(oldSensitive, e.AsString())
		}
	} else if !v.IsNull() {
		return false
	}
	return slices.Equal(oldSensitive, args.SensitiveValues)
}

// newMachineChange is configChange when machineId changes: the resource is
// replaced and the new machine installed from maintenance mode.
const newMachineChange = "install: another machine at this address (machineId changes); configured from maintenance mode"

// newMachine reports a machineId that was set and changes to another known
// value. A machineId set for the first time or removed is no new machine, and
// neither is one not known yet: a VM updated in place may show its UUID as
// unknown in previews, and replacing every node whose VM restarts would be
// far worse than a preview that shows a replaced VM's apply as an update (the
// VM's own replacement is in the preview; the update sees the new UUID and
// replaces the apply then).
func newMachine(oldInputs, newInputs property.Map) bool {
	old := oldInputs.Get("machineId")
	if !old.IsString() || old.AsString() == "" {
		return false
	}

	in := newInputs.Get("machineId")

	return in.IsString() && in.AsString() != "" && !strings.EqualFold(in.AsString(), old.AsString())
}

// checkVersionMatchesImage refuses a talosVersion other than the version in
// the tag of machine.install.image: the upgrade installs that image, so the
// node would reboot into the image's version and never report talosVersion.
func checkVersionMatchesImage(args ConfigurationApplyArgs) *p.CheckFailure {
	if args.TalosVersion == nil || *args.TalosVersion == "" {
		return nil
	}

	want, err := talosconfig.ParseRelease(*args.TalosVersion)
	if err != nil {
		return nil // reported above
	}

	image, _ := talosapi.ConfigInstallImage([]byte(args.MachineConfiguration)) //nolint:errcheck // "" when absent
	tag, ok := talosapi.ImageVersion(image)

	if !ok || sameTalosVersion(tag, talosconfig.TalosTag(want)) {
		return nil // no version tag (a digest or a custom tag): talosVersion decides
	}

	return &p.CheckFailure{Property: "talosVersion", Reason: fmt.Sprintf(
		"talosVersion %s differs from the tag of the configuration's machine.install.image (%s): the node is "+
			"upgraded with that image and would run %s, never %s. Generate the configuration with the same Talos "+
			"version (getMachineConfiguration talosVersion or installImage), or leave talosVersion unset to follow the image tag",
		talosconfig.TalosTag(want), image, tag, talosconfig.TalosTag(want))}
}

// deriveConfigChange says in one line, for the preview's detailed diff,
// what the update from the old inputs does to the node: nil when neither
// the configuration nor the VM (healthGate.vm) changes. Diff shows it as
// added on every update that has one, never as a change from the previous
// update's line.
func deriveConfigChange(oldInputs property.Map, args ConfigurationApplyArgs) *string {
	var c nodeChange

	c.mode = modeOf(args.ApplyMode)

	if old := oldInputs.Get("healthGate"); old.IsMap() && args.HealthGate != nil && args.HealthGate.Vm != nil {
		if v := old.AsMap().Get("vm"); v.IsString() && vmChanged(v.AsString(), *args.HealthGate.Vm) {
			c.vmFrom, c.vmTo = v.AsString(), *args.HealthGate.Vm
		}
	}

	if oldCfg := oldInputs.Get("machineConfiguration"); oldCfg.IsString() && oldCfg.AsString() != "" &&
		oldCfg.AsString() != args.MachineConfiguration {
		oldDigest, err1 := talosapi.ConfigDigest([]byte(oldCfg.AsString()))
		newDigest, err2 := talosapi.ConfigDigest([]byte(args.MachineConfiguration))

		if err1 == nil && err2 == nil && oldDigest != newDigest {
			oldArgs := ConfigurationApplyArgs{MachineConfiguration: oldCfg.AsString()}

			if v := oldInputs.Get("talosVersion"); v.IsString() {
				s := v.AsString()
				oldArgs.TalosVersion = &s
			}

			c.oldCfg, c.newCfg = oldArgs.MachineConfiguration, args.MachineConfiguration
			c.fromVersion, _ = desiredVersion(oldArgs)
			c.toVersion, _ = desiredVersion(args)
		}
	}

	if c.oldCfg == "" && c.vmFrom == c.vmTo {
		return nil
	}

	text, _ := changeLine(c)

	return &text
}

// configView is the redacted view of a configuration, nil when it does not
// parse.
func configView(machineConfiguration string, sensitive []string) map[string]string {
	view, err := talosconfig.RedactWith(machineConfiguration, sensitive)
	if err != nil {
		return nil
	}

	return view.Map()
}

// desiredVersion is the Talos version a node must run: talosVersion, else
// the tag of the configuration's installer image, else "" (not managed).
func desiredVersion(args ConfigurationApplyArgs) (version, image string) {
	image, _ = talosapi.ConfigInstallImage([]byte(args.MachineConfiguration)) //nolint:errcheck // "" when it does not parse

	if args.TalosVersion != nil && *args.TalosVersion != "" {
		v, err := talosconfig.ParseVersion(*args.TalosVersion)
		if err == nil {
			return talosconfig.TalosTag(v), image
		}
	}

	v, _ := talosapi.ImageVersion(image)

	return v, image
}

// validationVersion is the Talos version a configuration is validated for:
// the one the node is to run, else (no version known) the newest this
// provider knows, as a node of that release checks it.
func validationVersion(args ConfigurationApplyArgs) string {
	if v, _ := desiredVersion(args); v != "" {
		if _, err := talosconfig.CheckTalosVersion(v); err == nil {
			return v
		}
	}

	return talosconfig.DefaultTalosVersion
}

// Diff says what an update does, property by property. Configuration
// changes are listed by path inside configView (secret values as
// fingerprints), and the effect on the node (live, reboot, upgrade) is
// configChange's one line, also logged as an info line. A change of
// healthGate alone is no change (the gate is read by the next update that
// touches the node), except healthGate.vm: the VM restarted or its disks
// moved, and the update checks health again; or the stored one lacks keys
// this provider added, and the update only records them (gateKeysAdded).
func (*ConfigurationApply) Diff(ctx context.Context, req infer.DiffRequest[ConfigurationApplyArgs, ConfigurationApplyState]) (infer.DiffResponse, error) {
	log := enginelog.Logger(ctx)

	if err := checkNodeUpgrade(req.State, req.Inputs); err != nil {
		return infer.DiffResponse{}, err
	}

	d, notes := diffConfigurationApply(req.State, req.Inputs)

	for _, n := range notes {
		if n.once != "" && !saidNotes.first(n.once) {
			continue
		}

		if n.warning {
			log.Warning(n.text)
		} else {
			log.Info(n.text)
		}
	}

	return d, nil
}

// checkNodeUpgrade checks, at preview, the Talos upgrade an update would run
// (as the component's plan does for its nodes): an error for a jump the node
// refuses or one that skips a minor release.
func checkNodeUpgrade(old ConfigurationApplyState, in ConfigurationApplyArgs) error {
	want, _ := desiredVersion(in)
	if want == "" || old.RunningVersion == "" || sameTalosVersion(want, old.RunningVersion) {
		return nil
	}

	if err := talosconfig.CheckUpgrade(old.RunningVersion, want); err != nil {
		return fmt.Errorf("node %s runs Talos %s and cannot be upgraded to %s: %w", nodeLabel(in), old.RunningVersion, want, err)
	}

	return nil
}

type diffNote struct {
	text    string
	warning bool
	// once: said only the first time in the process (saidNotes), by this key
	once string
}

// diffConfigurationApply is the pure part of Diff.
func diffConfigurationApply(old ConfigurationApplyState, in ConfigurationApplyArgs) (p.DiffResponse, []diffNote) {
	dd := map[string]p.PropertyDiff{}
	upd := p.PropertyDiff{Kind: p.Update, InputDiff: true}

	if in.Node != old.Node {
		dd["node"] = p.PropertyDiff{Kind: p.UpdateReplace, InputDiff: true}
	}

	// Another machine at the address: replaced, the old resource deleted
	// first so that its reset cannot reach the new machine once configured.
	if deref(in.ConfigChange) == newMachineChange ||
		(deref(old.MachineId) != "" && deref(in.MachineId) != "" && !strings.EqualFold(*old.MachineId, *in.MachineId)) {
		dd["machineId"] = p.PropertyDiff{Kind: p.UpdateReplace, InputDiff: true}
		dd["configChange"] = p.PropertyDiff{Kind: p.Add, InputDiff: true}

		return p.DiffResponse{HasChanges: true, DeleteBeforeReplace: true, DetailedDiff: dd},
			[]diffNote{{text: "node " + nodeLabel(in) + ": " + newMachineChange}}
	} else if deref(old.MachineId) == "" && deref(in.MachineId) != "" {
		dd["machineId"] = upd // recorded without contacting the node
	}

	for name, changed := range map[string]bool{
		"endpoints":           !equalStrings(old.Endpoints, in.Endpoints),
		"clientConfiguration": old.ClientConfiguration != in.ClientConfiguration,
		"applyMode":           modeOf(old.ApplyMode) != modeOf(in.ApplyMode),
		"tryTimeout":          deref(old.TryTimeout) != deref(in.TryTimeout),
		"talosVersion":        deref(old.TalosVersion) != deref(in.TalosVersion),
		"upgrade":             !reflect.DeepEqual(old.Upgrade, in.Upgrade),
		"reset":               !sameReset(old.Reset, in.Reset),
		"timeouts":            !reflect.DeepEqual(old.Timeouts, in.Timeouts),
	} {
		if changed {
			dd[name] = upd
		}
	}

	configChanged := diffMachineConfiguration(old, in, dd)

	var madeSecret []diffNote
	if !configChanged && viewRedactedAgain(old, in) {
		dd["sensitiveValues"] = upd
		madeSecret = append(madeSecret, diffNote{text: "node " + nodeLabel(in) + ": other values are secret now; the " +
			"stored configuration view is redacted again, nothing changes on the node"})
	}

	want, _ := desiredVersion(in)
	upgrade := want != "" && old.RunningVersion != "" && !sameTalosVersion(want, old.RunningVersion)

	if upgrade && !configChanged {
		if _, ok := dd["talosVersion"]; !ok {
			dd["talosVersion"] = upd
		}
	}

	// The VM changed (restarted with new settings, or its disks moved):
	// the update checks health again.
	vm := vmChange(old.HealthGate, in.HealthGate)

	change := nodeChange{mode: modeOf(in.ApplyMode), vmFrom: vm[0], vmTo: vm[1], fromVersion: old.RunningVersion, toVersion: want}
	notes := append(madeSecret, diffNotes(old, in, change, configChanged, upgrade)...)

	byCheck := vmChangedByCheck(old.HealthGate, in, configChanged)
	if byCheck {
		notes = append(notes, diffNote{text: "node " + nodeLabel(in) + ": " + *in.ConfigChange})
	}

	// What happens to the node, as one added line (never "previous line =>
	// this one": the previous update's line says nothing about this one).
	if in.ConfigChange != nil && (configChanged || vm[0] != vm[1] || byCheck) {
		dd["configChange"] = p.PropertyDiff{Kind: p.Add, InputDiff: true}
	} else if vm[0] != vm[1] {
		dd["healthGate.vm"] = upd
	}

	if len(dd) == 0 {
		// Nothing else differs, but the stored gate predates some of its
		// keys: recorded by an update that does nothing on the node
		// (configuration_apply_gate_keys.go).
		if keys := gateKeysAdded(old.HealthGate, in.HealthGate); len(keys) > 0 {
			dd["healthGate.vm"] = upd

			return p.DiffResponse{HasChanges: true, DetailedDiff: dd}, []diffNote{gateRefresh(in, keys)}
		}

		return p.DiffResponse{}, nil
	}

	return p.DiffResponse{HasChanges: true, DetailedDiff: dd}, notes
}

// diffMachineConfiguration adds the machine configuration's change to dd: the
// changed paths of the redacted view where both sides have one, the whole
// property otherwise. It reports whether the configuration changed.
func diffMachineConfiguration(old ConfigurationApplyState, in ConfigurationApplyArgs, dd map[string]p.PropertyDiff) bool {
	upd := p.PropertyDiff{Kind: p.Update, InputDiff: true}

	if in.MachineConfiguration == "" {
		// Unknown until the resources it comes from are created.
		dd["machineConfiguration"] = upd

		return true
	}

	same, err := talosapi.ConfigHasDigest([]byte(in.MachineConfiguration), old.ConfigDigest)
	if err == nil && same {
		return false
	}

	// Old values come from the state's outputs (create stores the
	// view there), new ones from the checked inputs.
	var paths map[string]p.DiffKind
	if len(old.ConfigView) > 0 && len(in.ConfigView) > 0 {
		paths = viewChanges(old.ConfigView, in.ConfigView)
	}

	for path, kind := range paths {
		dd[resource.PropertyPath{"configView", path}.String()] = p.PropertyDiff{Kind: kind}
	}

	if len(paths) == 0 || err != nil {
		// No view to show paths from (a view missing in the state,
		// or a configuration that does not parse).
		dd["machineConfiguration"] = upd
	}

	return true
}

// diffNotes is the line the preview prints for the node: an unfinished last
// operation, or what the configuration change, upgrade or VM restart does to it.
func diffNotes(old ConfigurationApplyState, in ConfigurationApplyArgs, change nodeChange, configChanged, upgrade bool) []diffNote {
	switch {
	case old.ConfigDigest == "" && in.MachineConfiguration != "":
		return []diffNote{{text: fmt.Sprintf("node %s: the last operation on the node did not finish; the update checks the node and applies the configuration again if it does not run it", nodeLabel(in))}}
	case configChanged && in.MachineConfiguration != "" && old.MachineConfiguration != "":
		change.oldCfg, change.newCfg = old.MachineConfiguration, in.MachineConfiguration
		fallthrough
	case upgrade || change.vmFrom != change.vmTo:
		text, warning := changeLine(change)

		return []diffNote{{text: "node " + nodeLabel(in) + ": " + text, warning: warning}}
	}

	return nil
}

// nodeLabel names a node for a reader: its hostname when the configuration
// sets one, with its address.
func nodeLabel(in ConfigurationApplyArgs) string {
	return labelNode(in.Node, []byte(in.MachineConfiguration))
}

// labelNode is nodeLabel for a node address and the configuration it runs.
func labelNode(node string, machineConfig []byte) string {
	if name := talosapi.ConfigNodename(machineConfig); name != "" {
		return name + " (" + node + ")"
	}

	return node
}

// vmChangedByCheck reports a VM change that only Check could see: the
// state's healthGate.vm lacks a key the new one has (it was stored before
// the key was added: a `pulumi up` that changes nothing records the new
// inputs but keeps the outputs, pulumi pkg resource/deploy/step.go
// SameStep.Apply), and Check, comparing with the last inputs, which have
// it, derived a change line while the configuration is the same.
func vmChangedByCheck(old *HealthGate, in ConfigurationApplyArgs, configChanged bool) bool {
	if configChanged || in.ConfigChange == nil || *in.ConfigChange == newMachineChange ||
		old == nil || old.Vm == nil || in.HealthGate == nil || in.HealthGate.Vm == nil {
		return false
	}

	return len(changedVMKeys(*in.HealthGate.Vm, *old.Vm)) > 0 && !vmChanged(*old.Vm, *in.HealthGate.Vm)
}

// vmChange is healthGate.vm before and after, both "" unless it
// changed (vmChanged; a gate without one, from an older state, is no
// change).
func vmChange(old, in *HealthGate) [2]string {
	if old == nil || in == nil || old.Vm == nil || in.Vm == nil || !vmChanged(*old.Vm, *in.Vm) {
		return [2]string{}
	}

	return [2]string{*old.Vm, *in.Vm}
}

// viewRedactedAgain reports the same configuration with other values held
// secret (a value the user now passes as a secret): the stored view, which
// showed it, is redacted by an update that does not touch the node. Diff
// names only the secret input: a path under configView would print the old
// value.
func viewRedactedAgain(old ConfigurationApplyState, in ConfigurationApplyArgs) bool {
	return in.MachineConfiguration != "" && !sameSet(old.SensitiveValues, in.SensitiveValues) &&
		len(in.ConfigView) > 0 && !maps.Equal(old.ConfigView, in.ConfigView)
}

// sameSet compares two lists as sets.
func sameSet(a, b []string) bool {
	as, bs := slices.Clone(a), slices.Clone(b)
	slices.Sort(as)
	slices.Sort(bs)

	return slices.Equal(slices.Compact(as), slices.Compact(bs))
}

// viewChanges compares two redacted views key by key.
func viewChanges(old, updated map[string]string) map[string]p.DiffKind {
	out := map[string]p.DiffKind{}

	for k, v := range updated {
		ov, ok := old[k]

		switch {
		case !ok:
			out[k] = p.Add
		case ov != v:
			out[k] = p.Update
		}
	}

	for k := range old {
		if _, ok := updated[k]; !ok {
			out[k] = p.Delete
		}
	}

	return out
}

func sameTalosVersion(a, b string) bool {
	va, errA := talosconfig.ParseVersion(a)
	vb, errB := talosconfig.ParseVersion(b)

	if errA != nil || errB != nil {
		return a == b
	}

	return va.Equals(vb)
}

func modeOf(m *ApplyMode) talosapi.ApplyMode {
	if m == nil {
		return talosapi.ApplyAuto
	}

	mode, err := talosapi.ParseApplyMode(string(*m))
	if err != nil {
		return talosapi.ApplyAuto
	}

	return mode
}

func deref(s *string) string {
	if s == nil {
		return ""
	}

	return *s
}

// sameReset compares reset settings; an empty list of control planes is
// the same as none.
func sameReset(a, b *ResetOnDelete) bool {
	if a == nil || b == nil {
		return a == b
	}

	x, y := *a, *b
	x.ControlPlanes, y.ControlPlanes = nil, nil

	return reflect.DeepEqual(x, y) && slices.Equal(a.ControlPlanes, b.ControlPlanes)
}

// equalStrings: the same strings, in any order.
func equalStrings(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}
