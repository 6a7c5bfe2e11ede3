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
	"github.com/pulumi/pulumi/sdk/v3/go/property"

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
			args.ConfigChange = deriveConfigChange(req.OldInputs, args)
		}
	}

	return infer.CheckResponse[ConfigurationApplyArgs]{Inputs: args, Failures: fails}, nil
}

// deriveConfigChange describes, for the preview's detailed diff, how the
// configuration change from the old inputs takes effect ("... the node
// reboots (because of machine.env) (config 1a2b3c4d)"). It is copied when the
// configuration did not change, so that it never shows as a change by itself.
func deriveConfigChange(oldInputs property.Map, args ConfigurationApplyArgs) *string {
	oldCfg := oldInputs.Get("machineConfiguration")

	prev := oldInputs.Get("configChange")

	var keep *string
	if prev.IsString() {
		v := prev.AsString()
		keep = &v
	}

	if !oldCfg.IsString() || oldCfg.AsString() == "" {
		return keep
	}

	oldDigest, err1 := talosapi.ConfigDigest([]byte(oldCfg.AsString()))
	newDigest, err2 := talosapi.ConfigDigest([]byte(args.MachineConfiguration))

	if err1 != nil || err2 != nil || oldDigest == newDigest {
		return keep
	}

	var oldArgs ConfigurationApplyArgs
	oldArgs.MachineConfiguration = oldCfg.AsString()

	if v := oldInputs.Get("talosVersion"); v.IsString() {
		s := v.AsString()
		oldArgs.TalosVersion = &s
	}

	from, _ := desiredVersion(oldArgs)
	to, _ := desiredVersion(args)

	text, _ := changeEffect(oldArgs.MachineConfiguration, args.MachineConfiguration, modeOf(args.ApplyMode), from, to)
	text += " (config " + newDigest[:8] + ")"

	return &text
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

	if upgrade && !configChanged {
		if _, ok := dd["talosVersion"]; !ok {
			dd["talosVersion"] = upd
		}
	}

	switch {
	case old.ConfigDigest == "" && in.MachineConfiguration != "":
		notes = append(notes, diffNote{text: fmt.Sprintf("node %s: the last operation on the node did not finish; the update checks the node and applies the configuration again if it does not run it", in.Node)})
	case configChanged && in.MachineConfiguration != "" && old.MachineConfiguration != "":
		text, warning := changeEffect(old.MachineConfiguration, in.MachineConfiguration, modeOf(in.ApplyMode), old.RunningVersion, want)
		notes = append(notes, diffNote{text: "node " + in.Node + ": " + text, warning: warning})

		if in.ConfigChange != nil {
			dd["configChange"] = upd
		}
	case upgrade:
		notes = append(notes, diffNote{text: fmt.Sprintf("node %s: %s", in.Node, upgradeText(old.RunningVersion, want))})
	}

	if len(dd) == 0 {
		return p.DiffResponse{}, nil
	}

	return p.DiffResponse{HasChanges: true, DetailedDiff: dd}, notes
}

func upgradeText(from, to string) string {
	return fmt.Sprintf("Talos upgrade %s → %s through the Upgrade API (the node reboots; the VM is kept)", from, to)
}

// changeEffect says how going from one configuration to another takes
// effect on a node running fromVersion that must run toVersion; warning
// marks a change the apply mode will refuse.
func changeEffect(oldCfg, newCfg string, mode talosapi.ApplyMode, fromVersion, toVersion string) (string, bool) {
	ch, err := talosconfig.ClassifyChange(oldCfg, newCfg)
	if err != nil {
		return fmt.Sprintf("the configuration changes (%s)", err), false
	}

	var prefix string

	switch {
	case toVersion != "" && fromVersion != "" && !sameTalosVersion(fromVersion, toVersion):
		prefix = upgradeText(fromVersion, toVersion) + ", then "
	case ch.Upgrade:
		// Another installer image for the same version (another schematic).
		prefix = fmt.Sprintf("installer image changes (%s → %s): Talos upgrade through the Upgrade API (the node reboots; the VM is kept), then ", ch.OldImage, ch.NewImage)
	}

	n := len(ch.Changed)

	switch {
	case !ch.Reboot && (mode == talosapi.ApplyAuto || mode == talosapi.ApplyNoReboot || mode == talosapi.ApplyTry):
		return fmt.Sprintf("%s%d configuration path(s) change, applied without a reboot (mode %s)", prefix, n, mode), false
	case mode == talosapi.ApplyStaged:
		return fmt.Sprintf("%s%d configuration path(s) change, staged for the next reboot (mode staged)", prefix, n), false
	case ch.Reboot && mode == talosapi.ApplyNoReboot:
		return fmt.Sprintf("%sthe change needs a reboot (%s) but applyMode is no-reboot: the update will fail; use auto or reboot", prefix, strings.Join(ch.RebootPaths, ", ")), true
	case ch.Reboot:
		return fmt.Sprintf("%s%d configuration path(s) change, the node reboots (because of %s)", prefix, n, strings.Join(ch.RebootPaths, ", ")), false
	default:
		return fmt.Sprintf("%s%d configuration path(s) change, the node reboots (mode %s)", prefix, n, mode), false
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
