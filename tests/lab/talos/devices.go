package talos

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"

	blockpb "github.com/siderolabs/talos/pkg/machinery/api/resource/definitions/block"
	"github.com/siderolabs/talos/pkg/machinery/cel"
	"github.com/siderolabs/talos/pkg/machinery/cel/celenv"
	"github.com/siderolabs/talos/pkg/machinery/proto"
	"github.com/siderolabs/talos/pkg/machinery/resources/block"
)

// blockDevice is a disk as Linux inside the guest names it.
type blockDevice struct {
	Disk
	DevName   string // "sda", "vda"
	Transport string // "virtio" or "scsi" (as block.Disk.Transport)
}

var diskNameRe = regexp.MustCompile(`^(scsi|virtio|sata|ide)(\d+)$`)

// linuxDevices names the VM's disks the way the guest kernel does:
// virtio-blk disks are /dev/vdX in slot order; SCSI, SATA and IDE disks are
// all sd devices, lettered in probe order (scsi, then sata, then ide, each by
// slot). This is why a Talos config for a scsi disk says /dev/sda and one for a
// virtio disk says /dev/vda.
func linuxDevices(disks []Disk) ([]blockDevice, error) {
	type slot struct {
		bus   string
		index int
		disk  Disk
	}

	busOrder := map[string]int{"virtio": 0, "scsi": 1, "sata": 2, "ide": 3}

	slots := make([]slot, 0, len(disks))

	for _, d := range disks {
		m := diskNameRe.FindStringSubmatch(d.Name)
		if m == nil {
			return nil, fmt.Errorf("disk %q: not a Proxmox disk interface name (scsiN, virtioN, sataN, ideN)", d.Name)
		}

		idx, _ := strconv.Atoi(m[2])
		slots = append(slots, slot{bus: m[1], index: idx, disk: d})
	}

	slices.SortFunc(slots, func(a, b slot) int {
		return cmp.Or(cmp.Compare(busOrder[a.bus], busOrder[b.bus]), cmp.Compare(a.index, b.index))
	})

	var (
		out    []blockDevice
		vd, sd int
	)

	for _, s := range slots {
		dev := blockDevice{Disk: s.disk}

		if s.bus == "virtio" {
			dev.DevName, dev.Transport = "vd"+driveLetters(vd), "virtio"
			vd++
		} else {
			dev.DevName, dev.Transport = "sd"+driveLetters(sd), "scsi"
			sd++
		}

		out = append(out, dev)
	}

	return out, nil
}

// driveLetters returns a, b, ..., z, aa, ab, ... like the kernel's sd naming.
func driveLetters(n int) string {
	s := ""

	for {
		s = string(rune('a'+n%26)) + s
		n = n/26 - 1

		if n < 0 {
			return s
		}
	}
}

// matchDisks evaluates an install disk selector the way Talos does
// (config/types/block/blockhelpers.MatchDisks): the CEL expression sees each
// disk as a block.DiskSpec.
func matchDisks(devs []blockDevice, expr *cel.Expression) ([]blockDevice, error) {
	var out []blockDevice

	for _, d := range devs {
		disk := block.NewDisk(block.NamespaceName, d.DevName)
		fillDiskSpec(disk.TypedSpec(), d)

		pb := &blockpb.DiskSpec{}
		if err := proto.ResourceSpecToProto(disk, pb); err != nil {
			return nil, err
		}

		ok, err := expr.EvalBool(celenv.DiskLocator(), map[string]any{"disk": pb, "system_disk": false})
		if err != nil {
			return nil, err
		}

		if ok {
			out = append(out, d)
		}
	}

	return out, nil
}
