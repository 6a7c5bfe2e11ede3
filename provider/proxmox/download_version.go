package proxmox

import (
	"fmt"
	"strconv"
	"strings"
)

// importContentUnsupported says why a cluster running PVE version cannot
// download with content import, or "" when it can. download-url takes
// content import from PVE 8.4 on (pve-api apidata-8.4.0.json lists
// iso, vztmpl, import; bpg/terraform-provider-proxmox issue #1913 "import
// vm cloud images ... using PVE 8.4 API only"); older versions refuse the
// value. An unreadable version is not refused: the task would say.
func importContentUnsupported(version string) string {
	major, minor, ok := majorMinor(version)
	if !ok || major > 8 || (major == 8 && minor >= 4) {
		return ""
	}
	return fmt.Sprintf("content import needs Proxmox VE 8.4 or later, and this cluster runs %s: upgrade Proxmox VE, "+
		"or download the image another way (an ISO with content iso boots Talos too)", version)
}

// majorMinor reads "8.4.1" or "9.1" as (8, 4).
func majorMinor(v string) (int, int, bool) {
	parts := strings.SplitN(strings.TrimSpace(v), ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	return major, minor, err1 == nil && err2 == nil
}
