package proxmox

import (
	"context"
	"fmt"
	"strings"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

// checkImports checks, for each disk that importFrom will create, that the
// volume exists where the VM's node can read it and that it fits the disk's
// size: Proxmox imports at the image's size and a disk cannot shrink. Disks
// that exist already (on the VM, or on the clone source) are skipped: the
// source is used only when a disk is created.
func checkImports(ctx context.Context, c *checkReads, v *validator, a VirtualMachineArgs, old *VirtualMachineArgs) error {
	existing := map[string]bool{}
	if old != nil {
		for _, d := range old.Disks {
			existing[d.Interface] = true
		}
	}
	var todo []int
	for i, d := range a.Disks {
		if d.ImportFrom != nil && *d.ImportFrom != "" && !existing[d.Interface] &&
			v.u.known(fmt.Sprintf("disks[%d].importFrom", i)) && v.u.known(fmt.Sprintf("disks[%d].interface", i)) {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	if a.Clone != nil && old == nil && v.u.known("clone") {
		src := cloneSource(a)
		cfg, err := c.VMConfig(ctx, src)
		if err != nil && !pve.IsNotFound(err) {
			return fmt.Errorf("reading the clone source %s: %w", src, err)
		}
		for k := range cfg {
			existing[k] = true
		}
	}
	storages, err := c.Storages(ctx, a.Node)
	if err != nil {
		return fmt.Errorf("listing the storages of node %s: %w", a.Node, err)
	}
	available := map[string]bool{}
	for _, s := range storages {
		available[s.Name] = true
	}
	for _, i := range todo {
		d := a.Disks[i]
		if existing[d.Interface] {
			continue
		}
		path, vol := fmt.Sprintf("disks[%d].importFrom", i), *d.ImportFrom
		storage, _, _ := strings.Cut(vol, ":")
		if !available[storage] {
			v.fail(path, "%s is on storage %q, which node %s cannot read: put the image on a storage of node %s "+
				"(download it there with a DownloadFile on that node)", vol, storage, a.Node, a.Node)
			continue
		}
		_, ok, err := c.FindVolume(ctx, a.Node, storage, vol)
		if err != nil {
			return fmt.Errorf("looking for %s on node %s: %w", vol, a.Node, err)
		}
		if !ok {
			v.fail(path, "%s does not exist on node %s: download it first (a DownloadFile with content import on "+
				"node %s; local storage is per node)", vol, a.Node, a.Node)
			continue
		}
		// the disk the image holds, not the file: a qcow2 is smaller
		size, err := c.VolumeSize(ctx, a.Node, storage, vol)
		if err != nil {
			return fmt.Errorf("reading the size of %s on node %s: %w", vol, a.Node, err)
		}
		if need := ceilGiB(size); need > d.Size {
			v.fail(fmt.Sprintf("disks[%d].size", i), "%s holds a disk of %s, more than the %d GiB of disk %s: "+
				"Proxmox copies the whole image and cannot shrink it. Set size to %d or more", vol, humanBytes(size),
				d.Size, d.Interface, need)
		}
	}
	return nil
}

// ceilGiB rounds bytes up to whole GiB.
func ceilGiB(b uint64) int { return int((b + (1<<30 - 1)) >> 30) }

func humanBytes(b uint64) string {
	if b%(1<<30) == 0 {
		return fmt.Sprintf("%d GiB", b>>30)
	}
	return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
}
