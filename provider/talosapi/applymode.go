package talosapi

import (
	"fmt"
	"strings"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
)

// ApplyMode is how a configuration change takes effect, as talosctl
// apply-config --mode names it.
type ApplyMode string

const (
	// ApplyAuto lets Talos decide: without a reboot when it can apply the
	// change live, else with a reboot (machined ApplyConfiguration, AUTO).
	ApplyAuto ApplyMode = "auto"
	// ApplyNoReboot applies live or fails when the change needs a reboot.
	ApplyNoReboot ApplyMode = "no-reboot"
	// ApplyReboot saves the configuration and reboots.
	ApplyReboot ApplyMode = "reboot"
	// ApplyStaged saves the configuration for the next reboot only.
	ApplyStaged ApplyMode = "staged"
	// ApplyTry applies live and rolls back after a timeout unless confirmed
	// by another apply.
	ApplyTry ApplyMode = "try"
)

// ApplyModes lists the modes in the order they are documented.
var ApplyModes = []ApplyMode{ApplyAuto, ApplyNoReboot, ApplyReboot, ApplyStaged, ApplyTry}

// ParseApplyMode accepts the talosctl spelling, case-insensitively.
func ParseApplyMode(s string) (ApplyMode, error) {
	m := ApplyMode(strings.ToLower(strings.TrimSpace(s)))
	if m == "" {
		return ApplyAuto, nil
	}

	for _, known := range ApplyModes {
		if m == known {
			return m, nil
		}
	}

	return "", fmt.Errorf("apply mode %q is not one of auto, no-reboot, reboot, staged, try", s)
}

func (m ApplyMode) proto() machineapi.ApplyConfigurationRequest_Mode {
	switch m {
	case ApplyNoReboot:
		return machineapi.ApplyConfigurationRequest_NO_REBOOT
	case ApplyReboot:
		return machineapi.ApplyConfigurationRequest_REBOOT
	case ApplyStaged:
		return machineapi.ApplyConfigurationRequest_STAGED
	case ApplyTry:
		return machineapi.ApplyConfigurationRequest_TRY
	default:
		return machineapi.ApplyConfigurationRequest_AUTO
	}
}

// modeFromProto maps the mode a node reports back (AUTO is resolved to
// NO_REBOOT or REBOOT by the node) to ours.
func modeFromProto(p machineapi.ApplyConfigurationRequest_Mode) ApplyMode {
	switch p { //nolint:exhaustive
	case machineapi.ApplyConfigurationRequest_NO_REBOOT:
		return ApplyNoReboot
	case machineapi.ApplyConfigurationRequest_REBOOT:
		return ApplyReboot
	case machineapi.ApplyConfigurationRequest_STAGED:
		return ApplyStaged
	case machineapi.ApplyConfigurationRequest_TRY:
		return ApplyTry
	default:
		return ApplyAuto
	}
}

// maintenanceMode is the mode sent to a node in maintenance mode, which
// accepts only AUTO, REBOOT and TRY (siderolabs/talos
// internal/app/maintenance/server.go ApplyConfiguration). A first install
// always reboots into the installed system, so no-reboot and staged (which
// describe how later changes apply) become auto there.
func (m ApplyMode) maintenanceMode() ApplyMode {
	switch m {
	case ApplyReboot, ApplyTry:
		return m
	default:
		return ApplyAuto
	}
}
