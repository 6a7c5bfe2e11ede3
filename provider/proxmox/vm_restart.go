package proxmox

import (
	"context"
	"fmt"
	"slices"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"

	"github.com/proxmoxtalos/proxmoxtalos/provider/config"
	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

// restartPaths are the inputs a running VM takes only at its next start:
// qemu-server PVE/QemuServer.pm vmconfig_hotplug_pending hot-plugs none of
// cores, sockets, cpu, bios or machine, and memory only with the `memory`
// hotplug feature (default hotplug is network,disk,usb).
var restartPaths = []string{"cpu.cores", "cpu.sockets", "cpu.type", "memory.dedicated", "bios", "machine"}

// restartWarning says at preview which changes of a running VM wait for a
// restart and whether the update restarts it; "" when none do. memHotplug
// is asked only when memory.dedicated changes (it reads the VM's config).
func restartWarning(old VirtualMachineState, news VirtualMachineArgs, memHotplug func() bool) string {
	// a paused VM is resumed, not restarted, by the update (vm_converge);
	// after a failed operation (StatusUnfinished) it may well run
	if (old.Status != "running" && old.Status != StatusUnfinished && !pve.IsPausedStatus(old.Status)) || !wantsRunning(news) {
		return ""
	}
	d := diffVM(old, news)
	var paths []string
	for _, path := range restartPaths {
		if _, changed := d.DetailedDiff[path]; changed && !(path == "memory.dedicated" && memHotplug()) {
			paths = append(paths, path)
		}
	}
	paths = append(paths, coldPluggedDisks(old.Disks, news.Disks)...)
	if len(paths) == 0 || diffReplaces(d) {
		return ""
	}
	// named as the user named it: Pulumi's output does not always show
	// which resource a warning belongs to
	vm := fmt.Sprintf("VM %d on node %s", old.VMID, old.Node)
	if news.Name != nil && *news.Name != "" {
		vm = "VM " + *news.Name
	}
	verb := "takes"
	if len(paths) > 1 {
		verb = "take"
	}
	what := fmt.Sprintf("%s: %s %s effect only after a restart", vm, strings.Join(paths, ", "), verb)
	if news.RebootAfterUpdate != nil && !*news.RebootAfterUpdate {
		return what + "; the update will NOT restart the VM (rebootAfterUpdate: false), so the changes stay " +
			"pending until it restarts"
	}
	return what + "; the update will restart the VM (set rebootAfterUpdate: false to restart it yourself later)"
}

// coldPluggedDisks names the sata and ide disks an update adds or removes
// ("disks (sata1 added)"): qemu-server hot-plugs scsi and virtio disks only
// (PVE/QemuServer.pm vmconfig_update_disk, vmconfig_hotplug_pending), so
// these stay pending until the VM restarts. Disks not given are not managed.
func coldPluggedDisks(old, news []VirtualMachineDisk) []string {
	if news == nil {
		return nil
	}
	has := func(ds []VirtualMachineDisk, iface string) bool {
		return slices.ContainsFunc(ds, func(d VirtualMachineDisk) bool { return d.Interface == iface })
	}
	var out []string
	note := func(ds, other []VirtualMachineDisk, verb string) {
		for _, d := range ds {
			if (strings.HasPrefix(d.Interface, "sata") || strings.HasPrefix(d.Interface, "ide")) && !has(other, d.Interface) {
				out = append(out, fmt.Sprintf("disks (%s %s)", d.Interface, verb))
			}
		}
	}
	note(news, old, "added")
	note(old, news, "removed")
	return out
}

func diffReplaces(d p.DiffResponse) bool {
	for _, pd := range d.DetailedDiff {
		switch pd.Kind {
		case p.AddReplace, p.UpdateReplace, p.DeleteReplace:
			return true
		}
	}
	return false
}

// memoryHotplug reports whether the VM hot-plugs memory (its hotplug
// option lists "memory"); false when it cannot be read, Proxmox's default.
func memoryHotplug(ctx context.Context, old VirtualMachineState) bool {
	if old.VMID == 0 {
		return false
	}
	c, err := config.Client(ctx)
	if err != nil {
		return false
	}
	// a preview never waits for a node that does not answer
	ctx, cancel := context.WithTimeout(ctx, liveReadTimeout)
	defer cancel()
	cfg, err := c.VMConfig(ctx, pve.VMRef{Node: old.Node, VMID: old.VMID})
	if err != nil {
		return false
	}
	return slices.Contains(strings.FieldsFunc(cfg["hotplug"], func(r rune) bool { return r == ',' || r == ';' }), "memory")
}
