package talosconfig

import (
	"fmt"
	"slices"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/platforms"
)

// PlatformNames are the Talos platforms the Image Factory builds images
// for (machinery's platforms list: metal and the cloud platforms).
func PlatformNames() []string {
	names := []string{platforms.MetalPlatform().Name}
	for _, p := range platforms.CloudPlatforms() {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}

// CheckPlatform says what is wrong with a platform name, "" when it is
// one ("" is the default, nocloud).
func CheckPlatform(name string) string {
	if name == "" || slices.Contains(PlatformNames(), name) {
		return ""
	}
	hint := ""
	norm := strings.NewReplacer("-", "", "_", "", " ", "").Replace(strings.ToLower(name))
	for _, n := range PlatformNames() {
		if strings.ToLower(strings.ReplaceAll(n, "-", "")) == norm {
			hint = fmt.Sprintf(" (did you mean %q?)", n)
		}
	}
	return fmt.Sprintf("%q is not a Talos platform%s: use \"nocloud\" on Proxmox (addresses from its cloud-init "+
		"drive), or one of %s", name, hint, strings.Join(PlatformNames(), ", "))
}
