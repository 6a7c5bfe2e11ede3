package proxmox

import (
	"context"
	"fmt"
	"math"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

// checkCloneDiskSizes: a clone starts with the source's disks at their
// sizes, and converge can only grow a disk (qemu-server PVE/API2/Qemu.pm
// resize_vm: "shrinking disks is not supported"), so a listed disk smaller
// than the source's same interface would fail after the clone exists. Runs
// for a create only (a clone is never redone in place).
func checkCloneDiskSizes(ctx context.Context, c *checkReads, v *validator, a VirtualMachineArgs) error {
	if a.Clone == nil || len(a.Disks) == 0 || !v.u.known("disks") || !v.u.known("clone.node") {
		return nil
	}
	src := cloneSource(a)
	cfg, err := c.VMConfig(ctx, src)
	if err != nil {
		return fmt.Errorf("reading the clone source %s to compare its disk sizes: %w", src, err)
	}
	for i, d := range a.Disks {
		raw, ok := cfg[d.Interface]
		if !ok {
			continue
		}
		sd := parseDisk(raw)
		if sd.CDROM || sd.CloudInit {
			continue
		}
		need := ceilSizeGiB(sd.KV["size"])
		if d.Size > 0 && d.Size < need {
			v.fail(fmt.Sprintf("disks[%d].size", i), "disk %s of the clone source VM %d is %s (%d GiB rounded up), "+
				"and a disk cannot shrink: set size to %d or more, or leave the disk out of disks to keep the "+
				"source's size", d.Interface, src.VMID, sd.KV["size"], need, need)
		}
	}
	return nil
}

// ceilSizeGiB reads a Proxmox disk size ("20G", "512M", "1T", "4194304K",
// bytes) in GiB, rounded up.
func ceilSizeGiB(s string) int { return int(math.Ceil(pve.DiskSizeGiB(s) - 1e-9)) }
