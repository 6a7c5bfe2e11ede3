package talos

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// Check validates the inputs and derives configView, the redacted view of
// the configuration that lets previews name the paths that change.
func (*ConfigurationApply) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[ConfigurationApplyArgs], error) {
	args, fails, err := infer.DefaultCheck[ConfigurationApplyArgs](ctx, req.NewInputs)
	if err != nil || len(fails) > 0 {
		return infer.CheckResponse[ConfigurationApplyArgs]{Inputs: args, Failures: fails}, err
	}

	fails = append(fails, checkNodeAddress("node", args.Node)...)

	for i, e := range args.Endpoints {
		if e != "" {
			fails = append(fails, checkNodeAddress(fmt.Sprintf("endpoints[%d]", i), e)...)
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
		if _, err := talosconfig.ParseVersion(*args.TalosVersion); err != nil {
			fails = append(fails, p.CheckFailure{Property: "talosVersion", Reason: err.Error()})
		}
	}

	args.ConfigView = nil

	if args.MachineConfiguration != "" {
		// Validated the way a nocloud node validates it on apply (cloud mode:
		// the install section is checked by the node against its disks).
		if _, err := talosconfig.Validate(args.MachineConfiguration, talosconfig.Cloud); err != nil {
			fails = append(fails, p.CheckFailure{Property: "machineConfiguration", Reason: err.Error()})
		} else if req.OldInputs.Len() > 0 {
			// Only for updates: the view lets the preview list changed
			// paths; on create it would print the whole configuration.
			args.ConfigView = configView(args.MachineConfiguration)
		}
	}

	return infer.CheckResponse[ConfigurationApplyArgs]{Inputs: args, Failures: fails}, nil
}

// configView is the redacted view of a configuration, nil when it does not
// parse.
func configView(machineConfiguration string) map[string]string {
	view, err := talosconfig.Redact(machineConfiguration)
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

// Diff says what an update does, property by property. Configuration
// changes are listed by path inside configView (secret values as
// fingerprints), and the effect on the node (live, reboot, upgrade) is
// reported as an info line of the preview.
func (*ConfigurationApply) Diff(ctx context.Context, req infer.DiffRequest[ConfigurationApplyArgs, ConfigurationApplyState]) (infer.DiffResponse, error) {
	d, notes := diffConfigurationApply(req.State, req.Inputs)

	log := p.GetLogger(ctx)
	for _, n := range notes {
		if n.warning {
			log.Warning(n.text)
		} else {
			log.Info(n.text)
		}
	}

	return d, nil
}

type diffNote struct {
	text    string
	warning bool
}

// diffConfigurationApply is the pure part of Diff.
func diffConfigurationApply(old ConfigurationApplyState, in ConfigurationApplyArgs) (p.DiffResponse, []diffNote) {
	dd := map[string]p.PropertyDiff{}
	upd := p.PropertyDiff{Kind: p.Update, InputDiff: true}

	if in.Node != old.Node {
		dd["node"] = p.PropertyDiff{Kind: p.UpdateReplace, InputDiff: true}
	}

	for name, changed := range map[string]bool{
		"endpoints":           !equalStrings(old.Endpoints, in.Endpoints),
		"clientConfiguration": old.ClientConfiguration != in.ClientConfiguration,
		"applyMode":           modeOf(old.ApplyMode) != modeOf(in.ApplyMode),
		"tryTimeout":          deref(old.TryTimeout) != deref(in.TryTimeout),
		"talosVersion":        deref(old.TalosVersion) != deref(in.TalosVersion),
		"upgrade":             !reflect.DeepEqual(old.Upgrade, in.Upgrade),
		"reset":               !reflect.DeepEqual(old.Reset, in.Reset),
		"timeouts":            !reflect.DeepEqual(old.Timeouts, in.Timeouts),
	} {
		if changed {
			dd[name] = upd
		}
	}

	var notes []diffNote

	configChanged := false

	switch {
	case in.MachineConfiguration == "":
		// Unknown until the resources it comes from are created.
		dd["machineConfiguration"] = upd
		configChanged = true
	default:
		digest, err := talosapi.ConfigDigest([]byte(in.MachineConfiguration))
		if err != nil || digest != old.ConfigDigest {
			configChanged = true

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
		}
	}

	want, _ := desiredVersion(in)
	upgrade := want != "" && old.RunningVersion != "" && !sameTalosVersion(want, old.RunningVersion)

	if upgrade {
		notes = append(notes, diffNote{text: fmt.Sprintf("node %s: Talos upgrade %s → %s through the Upgrade API (the node reboots; the VM is kept)", in.Node, old.RunningVersion, want)})
		if _, ok := dd["talosVersion"]; !ok && !configChanged {
			dd["talosVersion"] = upd
		}
	}

	switch {
	case old.ConfigDigest == "" && in.MachineConfiguration != "":
		notes = append(notes, diffNote{text: fmt.Sprintf("node %s: the last operation on the node did not finish; the update checks the node and applies the configuration again if it does not run it", in.Node)})
	case configChanged && in.MachineConfiguration != "" && old.MachineConfiguration != "":
		notes = append(notes, effectNote(old, in, upgrade)...)
	}

	if len(dd) == 0 {
		return p.DiffResponse{}, nil
	}

	return p.DiffResponse{HasChanges: true, DetailedDiff: dd}, notes
}

// effectNote explains how a configuration change takes effect on the node.
func effectNote(old ConfigurationApplyState, in ConfigurationApplyArgs, upgrade bool) []diffNote {
	ch, err := talosconfig.ClassifyChange(old.MachineConfiguration, in.MachineConfiguration)
	if err != nil {
		return []diffNote{{text: fmt.Sprintf("node %s: the configuration changes (%s)", in.Node, err)}}
	}

	mode := modeOf(in.ApplyMode)
	n := len(ch.Changed)

	if ch.Upgrade && !upgrade {
		// The installer image changed without a version change (another
		// schematic): the node is upgraded to the new image.
		return []diffNote{{text: fmt.Sprintf("node %s: installer image changes (%s → %s): Talos upgrade through the Upgrade API (the node reboots; the VM is kept), then %d configuration path(s) applied", in.Node, ch.OldImage, ch.NewImage, n)}}
	}

	switch {
	case !ch.Reboot && (mode == talosapi.ApplyAuto || mode == talosapi.ApplyNoReboot || mode == talosapi.ApplyTry):
		return []diffNote{{text: fmt.Sprintf("node %s: %d configuration path(s) change, applied without a reboot (mode %s)", in.Node, n, mode)}}
	case mode == talosapi.ApplyStaged:
		return []diffNote{{text: fmt.Sprintf("node %s: %d configuration path(s) change, staged for the next reboot (mode staged)", in.Node, n)}}
	case ch.Reboot && mode == talosapi.ApplyNoReboot:
		return []diffNote{{warning: true, text: fmt.Sprintf("node %s: the change needs a reboot (%s) but applyMode is no-reboot: the update will fail; use auto or reboot", in.Node, strings.Join(ch.RebootPaths, ", "))}}
	case ch.Reboot:
		return []diffNote{{text: fmt.Sprintf("node %s: %d configuration path(s) change, the node reboots (because of %s)", in.Node, n, strings.Join(ch.RebootPaths, ", "))}}
	default:
		return []diffNote{{text: fmt.Sprintf("node %s: %d configuration path(s) change, the node reboots (mode %s)", in.Node, n, mode)}}
	}
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

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}

	x, y := append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(x)
	sort.Strings(y)

	return reflect.DeepEqual(x, y)
}
