package talos

import (
	"testing"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
)

// needsUpgrade decides whether reconcile calls the Upgrade API.
func TestNeedsUpgrade(t *testing.T) {
	const img112, img113 = "factory/installer/abc:v1.12.5", "factory/installer/abc:v1.13.0"
	const imgOther = "factory/installer/def:v1.12.5"
	prev := &ConfigurationApplyState{InstalledImage: img112}

	for _, tc := range []struct {
		name                string
		prev                *ConfigurationApplyState
		image, want, node   string
		mode                talosapi.Mode
		upgrade, evenIfSame bool
	}{
		{"same version, same image", prev, img112, "v1.12.5", "v1.12.5", talosapi.ModeSecure, false, false},
		// A new version comes with a new image, so evenIfSame is set too; harmless: the versions differ.
		{"newer version", prev, img113, "v1.13.0", "v1.12.5", talosapi.ModeSecure, true, true},
		{"newer version on a node without a recorded image", &ConfigurationApplyState{}, img113, "v1.13.0", "v1.12.5", talosapi.ModeSecure, true, false},
		{"version tags compared tolerantly", prev, img112, "1.12.5", "v1.12.5", talosapi.ModeSecure, false, false},
		{"other schematic, same version", prev, imgOther, "v1.12.5", "v1.12.5", talosapi.ModeSecure, true, true},
		{"other schematic in maintenance: the install takes it", prev, imgOther, "v1.12.5", "v1.12.5", talosapi.ModeMaintenance, false, false},
		{"no previous state: nothing to compare the image with", nil, imgOther, "v1.12.5", "v1.12.5", talosapi.ModeSecure, false, false},
		{"node version unknown", &ConfigurationApplyState{}, img113, "v1.13.0", "", talosapi.ModeSecure, false, false},
		{"no image in the configuration", prev, "", "v1.13.0", "v1.12.5", talosapi.ModeSecure, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			upgrade, evenIfSame := needsUpgrade(tc.prev, tc.image, tc.want, tc.node, tc.mode)
			if upgrade != tc.upgrade || evenIfSame != tc.evenIfSame {
				t.Fatalf("needsUpgrade = %v, %v; want %v, %v", upgrade, evenIfSame, tc.upgrade, tc.evenIfSame)
			}
		})
	}
}
