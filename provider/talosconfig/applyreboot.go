package talosconfig

// AppliesWithoutReboot reports a Talos version whose ApplyConfiguration no
// longer reboots for a change: it applies AUTO as NO_REBOOT, refuses mode
// REBOOT on a configured node, and no longer checks a NO_REBOOT or TRY change
// for one ("feat: drop apply config method reboot", siderolabs/talos
// 995bc30d5, first in v1.14.0-alpha.2; v1.14.0-rc.1 7a84d742b
// v1alpha1_server.go ApplyConfiguration sets the persistent and the active
// configuration). A change ClassifyChange says reboots (machine.env, say)
// then takes effect only at the node's next reboot, and Talos reports no
// pending reboot. false for a version that does not parse ("": unknown).
func AppliesWithoutReboot(version string) bool {
	v, err := ParseVersion(version)
	if err != nil {
		return false
	}

	// 1.14 pre-releases before alpha.2 still rebooted; none is supported.
	return v.Major > 1 || v.Minor >= 14
}
