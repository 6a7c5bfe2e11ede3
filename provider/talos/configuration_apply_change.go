package talos

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// nodeChange is what an update changes on one node.
type nodeChange struct {
	// oldCfg and newCfg are the configurations; both empty when the
	// configuration does not change.
	oldCfg, newCfg string
	mode           talosapi.ApplyMode
	// fromVersion and toVersion are the Talos versions the node runs and
	// must run ("" when unknown or not managed).
	fromVersion, toVersion string
	// vmFrom and vmTo are healthGate.vm before and after; equal when the VM
	// did not change.
	vmFrom, vmTo string
}

// maxPaths is how many paths a change line names before "+N more": the
// CLI cuts a value at about 150 characters.
const maxPaths = 2

// installImagePath is the configuration path an upgrade changes; it is
// part of the upgrade, not a change of its own.
const installImagePath = "machine.install.image"

// changeLine says in one short line what the update does to the node, for
// the preview ("live: 1 path, no reboot", "reboot: machine.env",
// "upgrade v1.12.5 → v1.12.6 (reboot, VM kept); then live: 1 path, no
// reboot"); warning marks a change the apply mode will refuse, or one that
// takes effect only at the node's next reboot (Talos 1.14).
func changeLine(c nodeChange) (string, bool) {
	var parts []string

	if c.vmFrom != c.vmTo {
		parts = append(parts, vmLine(c.vmFrom, c.vmTo))
	}

	upgrading := c.toVersion != "" && c.fromVersion != "" && !sameTalosVersion(c.fromVersion, c.toVersion)
	if upgrading {
		parts = append(parts, fmt.Sprintf("upgrade %s → %s (reboot, VM kept)", c.fromVersion, c.toVersion))
	}

	warning := false

	if c.oldCfg != "" && c.newCfg != "" {
		ch, err := talosconfig.ClassifyChange(c.oldCfg, c.newCfg)
		if err != nil {
			parts = append(parts, "configuration changes ("+firstLineOf(err.Error())+")")
		} else {
			if ch.Upgrade && !upgrading {
				// Another installer image for the same version: another
				// Image Factory schematic (extensions, kernel arguments).
				parts = append(parts, "upgrade: new installer image "+imageName(ch.NewImage)+" (reboot, VM kept)")
			}

			var line string

			line, warning = configLine(ch, c.mode, applyVersion(c))
			if line != "" {
				parts = append(parts, line)
			}
		}
	}

	if len(parts) == 0 {
		return "no change on the node", false
	}

	return strings.Join(parts, "; then "), warning
}

// applyVersion is the Talos version that takes the configuration: the one
// the node is upgraded to first, else the one it runs ("" when unknown).
func applyVersion(c nodeChange) string {
	if c.toVersion != "" {
		return c.toVersion
	}

	return c.fromVersion
}

// configLine describes the configuration paths that change, apart from the
// installer image of an upgrade, as the node's Talos version applies them:
// a version that AppliesWithoutReboot applies a change that needed a reboot
// without one, and the change waits for the node's next reboot.
func configLine(ch talosconfig.Change, mode talosapi.ApplyMode, version string) (string, bool) {
	changed := slices.DeleteFunc(slices.Clone(ch.Changed), func(p string) bool { return p == installImagePath })
	n := len(changed)

	if n == 0 {
		return "", false
	}

	switch {
	case mode == talosapi.ApplyStaged:
		return fmt.Sprintf("staged: %s, applied at the next reboot", pathCount(n)), false
	case !ch.Reboot && mode == talosapi.ApplyTry:
		return fmt.Sprintf("try: %s live, rolled back after tryTimeout unless applied again", pathCount(n)), false
	case !ch.Reboot && mode != talosapi.ApplyReboot:
		return fmt.Sprintf("live: %s, no reboot", pathCount(n)), false
	case ch.Reboot && mode != talosapi.ApplyReboot && talosconfig.AppliesWithoutReboot(version):
		return pendingLine(ch, changed, mode, version), true
	case ch.Reboot && (mode == talosapi.ApplyNoReboot || mode == talosapi.ApplyTry):
		return fmt.Sprintf("fails: %s %s a reboot, applyMode is %s (use auto or reboot)",
			pathList(ch.RebootPaths), agree(ch.RebootPaths, "needs", "need"), mode), true
	case ch.Reboot:
		line := "reboot: " + pathList(ch.RebootPaths)
		if n > len(ch.RebootPaths) {
			line += fmt.Sprintf(" (%s in all)", pathCount(n))
		}

		return line, false
	default:
		return fmt.Sprintf("reboot (applyMode reboot): %s", pathCount(n)), false
	}
}

// pendingLine is configLine for a change that needed a reboot before Talos
// 1.14, applied by version without one (mode auto, no-reboot or try) to
// the changed paths.
func pendingLine(ch talosconfig.Change, changed []string, mode talosapi.ApplyMode, version string) string {
	if mode == talosapi.ApplyTry {
		// A try configuration is not saved: a reboot ends it, so the
		// paths that need one never take effect (the update warns); only
		// the others are live until tryTimeout.
		line := fmt.Sprintf("try (Talos %s): %s never %s effect (reboot ends the try)",
			version, pathList(ch.RebootPaths), agree(ch.RebootPaths, "takes", "take"))

		live := len(slices.DeleteFunc(slices.Clone(changed), func(p string) bool { return slices.Contains(ch.RebootPaths, p) }))
		if live > 0 {
			line += fmt.Sprintf("; %s live until tryTimeout", strings.Replace(pathCount(live), " path", " other path", 1))
		}

		return line
	}

	return fmt.Sprintf("no reboot (Talos %s): %s effective only at the next reboot; applyMode reboot reboots now",
		version, pathList(ch.RebootPaths))
}

func pathCount(n int) string {
	if n == 1 {
		return "1 path"
	}

	return fmt.Sprintf("%d paths", n)
}

// agree is the verb's form for paths as its subject.
func agree(paths []string, one, many string) string {
	if len(paths) == 1 {
		return one
	}

	return many
}

// pathList names up to maxPaths paths.
func pathList(paths []string) string {
	if len(paths) <= maxPaths {
		return strings.Join(paths, ", ")
	}

	return fmt.Sprintf("%s +%d more", strings.Join(paths[:maxPaths], ", "), len(paths)-maxPaths)
}

// imageName shortens an installer image reference to its last path
// element, with a schematic ID cut to 12 characters
// ("nocloud-installer/ce4c980550dd…:v1.12.5").
func imageName(ref string) string {
	if i := strings.LastIndex(ref, "/"); i >= 0 {
		if j := strings.LastIndex(ref[:i], "/"); j >= 0 {
			ref = ref[j+1:]
		}
	}

	return longHex.ReplaceAllStringFunc(ref, func(h string) string { return h[:12] + "…" })
}

var longHex = regexp.MustCompile(`[0-9a-f]{32,}`)

// vmLine says what a change of healthGate.vm did to the VM: a restart,
// or disks moved, grown or changed live; either way the update checks
// health after it.
func vmLine(from, to string) string {
	a, b := vmFields(from), vmFields(to)
	how := ""
	// note names the disks' change: one word while only one kind is seen.
	note := func(kind string) {
		if how != "" && how != kind {
			kind = "changed"
		}

		how = kind
	}

	for _, k := range changedVMKeys(from, to) {
		switch {
		case k == "diskStorage":
			note("moved")
		case k == "diskSize": // qemu-server resize, live
			note("grown")
		case k == "dataDisks" && !diskSlotsRestart(a.values[k], b.values[k]):
			if sameDiskSlots(a.values[k], b.values[k]) {
				note("moved")
			} else {
				note("changed")
			}
		default:
			return "reboot: VM restart (" + vmChanges(from, to) + ")"
		}
	}

	if how == "" {
		how = "moved"
	}

	return "VM disks " + how + " live, no reboot (" + vmChanges(from, to) + "); health checked after"
}

// diskSlotsRestart reports data disks ("sata1:8:local-lvm,..." lists)
// added or removed on sata or ide, which qemu-server does not hot-plug
// (PVE/QemuServer.pm vmconfig_update_disk: scsi and virtio only): the VM
// restarted to take them. A disk moved to another storage or grown on
// any bus, and one added or removed on scsi or virtio, is live.
func diskSlotsRestart(from, to string) bool {
	a, b := diskSlots(from, false), diskSlots(to, false)

	for _, s := range append(slices.Clone(a), b...) {
		if slices.Contains(a, s) != slices.Contains(b, s) &&
			(strings.HasPrefix(s, "sata") || strings.HasPrefix(s, "ide")) {
			return true
		}
	}

	return false
}

// sameDiskSlots: the same disks with the same sizes, only storages differ.
func sameDiskSlots(from, to string) bool {
	a, b := diskSlots(from, true), diskSlots(to, true)
	slices.Sort(a)
	slices.Sort(b)

	return slices.Equal(a, b)
}

// diskSlots are a data disk list's interfaces, with their sizes when sized.
func diskSlots(list string, sized bool) []string {
	var out []string

	for _, d := range strings.Split(list, ",") {
		if d == "" {
			continue
		}

		iface, rest, _ := strings.Cut(d, ":")
		size, _, _ := strings.Cut(rest, ":")

		if sized {
			iface += ":" + size
		}

		out = append(out, iface)
	}

	return out
}

// vmChanged compares two healthGate.vm values as sets of key=value pairs:
// a key only in the new one is no change (a gate written before the key
// was, which says nothing about its value); a key with another value, or
// one gone, is.
func vmChanged(from, to string) bool {
	return len(changedVMKeys(from, to)) > 0
}

// changedVMKeys are the keys of from whose value differs in to, or that
// to lacks, in from's order.
func changedVMKeys(from, to string) []string {
	a, b := vmFields(from), vmFields(to)

	var out []string

	for _, k := range a.keys {
		if y, ok := b.values[k]; !ok || y != a.values[k] {
			out = append(out, k)
		}
	}

	return out
}

// vmChanges lists what differs between two healthGate.vm values
// ("cores 2 → 4, memory 4096MiB → 8192MiB"), by changedVMKeys. A value
// that is a digest says only that its key changed.
func vmChanges(from, to string) string {
	a, b := vmFields(from), vmFields(to)

	var out []string

	for _, k := range changedVMKeys(from, to) {
		x, y := a.values[k], b.values[k]

		switch {
		case isDigest(x) || isDigest(y):
			out = append(out, k+" changes")
		default:
			out = append(out, fmt.Sprintf("%s %s → %s", k, orDash(x), orDash(y)))
		}
	}

	if len(out) == 0 {
		return "settings change"
	}

	return pathList(out)
}

type fields struct {
	keys   []string
	values map[string]string
}

func vmFields(s string) fields {
	f := fields{values: map[string]string{}}

	for _, kv := range strings.Fields(s) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			k, v = kv, "set"
		}

		f.keys = append(f.keys, k)
		f.values[k] = v
	}

	return f
}

var digest = regexp.MustCompile(`^[0-9a-f]{8,}$`)

func isDigest(s string) bool { return digest.MatchString(s) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}

	return s
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 100 {
		s = s[:100] + "..."
	}

	return s
}
