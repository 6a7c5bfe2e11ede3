package talosconfig

import (
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/hashicorp/go-multierror"
	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"

	"github.com/proxmoxtalos/proxmoxtalos/provider/memo"
)

// RuntimeMode is the machine environment machinery validates a configuration
// for (it implements machinery's validation.RuntimeMode). Talos itself passes
// its platform's mode (internal/app/machined/pkg/runtime/mode.go): metal
// requires an install section; cloud platforms such as nocloud do not.
// Container mode is not offered: Proxmox VMs are never Talos-in-Docker.
type RuntimeMode struct {
	name    string
	install bool
}

var (
	// Metal requires install instructions (an install disk). Use it for nodes
	// booted from an ISO, which install themselves to disk.
	Metal = RuntimeMode{name: "metal", install: true}
	// Cloud is Talos's mode for cloud platforms such as nocloud booted from a
	// ready disk image; install instructions are optional.
	Cloud = RuntimeMode{name: "cloud", install: false}
)

// String implements validation.RuntimeMode.
func (m RuntimeMode) String() string { return m.name }

// RequiresInstall implements validation.RuntimeMode.
func (m RuntimeMode) RequiresInstall() bool { return m.install }

// InContainer implements validation.RuntimeMode.
func (m RuntimeMode) InContainer() bool { return false }

// Validate parses a machine configuration and validates it the way a Talos
// node running talosVersion does on ApplyConfiguration (configloader, then
// Provider.Validate, with the Kubernetes image tags checked against
// talosVersion: see imagetags.go). It returns machinery's warnings, and
// machinery's message on failure.
func Validate(configYAML string, mode RuntimeMode, talosVersion string) ([]string, error) {
	if mode.name == "" {
		mode = Metal
	}
	return validateText(configYAML, nil, mode, talosVersion)
}

// validateText is Validate; parsed, when not nil, is configYAML parsed by
// configloader, which it validates instead of parsing the text again.
func validateText(configYAML string, parsed config.Provider, mode RuntimeMode, talosVersion string) ([]string, error) {
	tv, err := CheckTalosVersion(talosVersion)
	if err != nil {
		return nil, err
	}
	// The answer depends on the text, the mode and the version alone: a
	// preview validates each configuration when it generates it and again
	// in ConfigurationApply's Check (memo).
	r := validations.Do(validationKey(configYAML, mode, talosVersion), func() validation {
		if parsed != nil {
			warnings, msg := validateParsed(parsed, configYAML, mode, tv)
			return validation{warnings: warnings, msg: msg}
		}
		warnings, msg := validate(configYAML, mode, tv)
		return validation{warnings: warnings, msg: msg}
	})
	warnings := slices.Clone(r.warnings)
	if r.msg != "" {
		return warnings, errors.New(r.msg)
	}
	return warnings, nil
}

// validation is what validate answered.
type validation struct {
	warnings []string
	msg      string // the error's text, "" when valid
}

var validations memo.Cache[validation]

// validationKey is what Validate's answer depends on.
func validationKey(configYAML string, mode RuntimeMode, talosVersion string) memo.Key {
	return memo.KeyOf(configYAML, mode.name, strconv.FormatBool(mode.install), talosVersion)
}

func validate(configYAML string, mode RuntimeMode, tv semver.Version) (warnings []string, errMsg string) {
	cfg, err := configloader.NewFromBytes([]byte(configYAML))
	if err != nil {
		return nil, "machine configuration does not parse: " + scrubDecodeError(err)
	}
	return validateParsed(cfg, configYAML, mode, tv)
}

// validateParsed validates configYAML parsed (cfg).
func validateParsed(cfg config.Provider, configYAML string, mode RuntimeMode, tv semver.Version) (warnings []string, errMsg string) {
	warnings, err := cfg.Validate(mode)
	if tagErrs := imageTagErrorsFor(cfg, tv); len(tagErrs) > 0 {
		err = multierror.Append(err, tagErrs...)
	}
	if err != nil {
		msg := scrub(flattenErrors(err.Error()), SensitiveValues(configYAML))
		return warnings, "machine configuration is invalid for " + mode.String() + " mode: " + msg
	}
	return warnings, ""
}

// scrubDecodeError rewrites a configloader error so that it keeps the
// positions and key names but never a value: "unknown keys found during
// decoding" lists the unknown keys' paths instead of dumping them with their
// values, and back-quoted values (yaml type errors) are elided.
func scrubDecodeError(err error) string {
	msg := err.Error()
	const unknown = "unknown keys found during decoding:"
	if head, tail, ok := strings.Cut(msg, unknown); ok {
		var paths []string
		if docs, perr := parseDocs(tail); perr == nil {
			for _, d := range docs {
				walkLeaves(d.body, nil, func(parts []any, _ any) {
					paths = append(paths, joinPath("", parts))
				})
			}
		}
		if len(paths) == 0 {
			paths = []string{"(could not list them)"}
		}
		msg = head + "unknown keys " + strings.Join(paths, ", ") + " (check the spelling against the Talos configuration reference)"
	}
	return quotedValue.ReplaceAllString(msg, "`…`")
}

var quotedValue = regexp.MustCompile("`[^`]*`")

// flattenErrors renders machinery's multierror text ("2 errors occurred:\n\t* a\n\t* b")
// on one line: "a; b".
func flattenErrors(msg string) string {
	msg = multiHeader.ReplaceAllString(msg, "")
	msg = strings.ReplaceAll(msg, "\n\t* ", "; ")
	msg = strings.TrimPrefix(msg, "\t* ")
	msg = strings.TrimSpace(msg)
	msg = strings.ReplaceAll(msg, ": ; ", ": ")
	return strings.TrimPrefix(msg, "; ")
}

var multiHeader = regexp.MustCompile(`\d+ errors? occurred:\n`)

// scrub replaces every occurrence of a secret value in text.
func scrub(text string, secrets []string) string {
	for _, s := range secrets {
		if len(s) >= 4 {
			text = strings.ReplaceAll(text, s, "(sensitive)")
		}
	}
	return text
}
