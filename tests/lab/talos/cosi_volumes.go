package talos

import (
	"context"
	"fmt"

	"github.com/cosi-project/runtime/pkg/state"

	"github.com/siderolabs/talos/pkg/machinery/imager/quirks"
	"github.com/siderolabs/talos/pkg/machinery/resources/block"
)

// systemVolume is one partition of an installed system disk.
type systemVolume struct {
	label      string
	index      int
	size       uint64
	fs         block.FilesystemType
	mountPoint string // "" when Talos does not mount it
}

// systemVolumes is the installer's partition layout (internal/pkg/partition,
// sizes from machinery's imager/quirks): GRUB on BIOS firmware (EFI, BIOS,
// BOOT, META, STATE, EPHEMERAL), systemd-boot with a UKI on UEFI (EFI, META,
// STATE, EPHEMERAL); EPHEMERAL takes the rest of the disk.
func systemVolumes(version string, uefi bool, diskSize uint64) []systemVolume {
	sizes := quirks.New(version).PartitionSizes()

	var vols []systemVolume
	if uefi {
		vols = []systemVolume{{label: "EFI", size: sizes.UKIEFISize(), fs: block.FilesystemTypeVFAT}}
	} else {
		vols = []systemVolume{
			{label: "EFI", size: sizes.GrubEFISize(), fs: block.FilesystemTypeVFAT},
			{label: "BIOS", size: sizes.GrubBIOSSize()},
			{label: "BOOT", size: sizes.GrubBootSize(), fs: block.FilesystemTypeXFS},
		}
	}

	vols = append(vols,
		systemVolume{label: "META", size: sizes.METASize()},
		systemVolume{label: "STATE", size: sizes.StateSize(), fs: block.FilesystemTypeXFS, mountPoint: "/system/state"},
	)

	used := uint64(0)
	for _, v := range vols {
		used += v.size
	}

	// GPT keeps 1 MiB at the start and 33 sectors of backup table at the end.
	ephemeral := uint64(0)
	if reserved := used + 2<<20; diskSize > reserved {
		ephemeral = diskSize - reserved
	}

	vols = append(vols, systemVolume{label: "EPHEMERAL", size: ephemeral, fs: block.FilesystemTypeXFS, mountPoint: "/var"})

	for i := range vols {
		vols[i].index = i + 1
	}

	return vols
}

// publishVolumes publishes the META, STATE and EPHEMERAL volumes of an
// installed node (block.VolumeStatus, and block.MountStatus for the mounted
// ones) once it runs configured; a live ISO boot has none of them.
func publishVolumes(ctx context.Context, st state.State, snap resourceSnapshot) error {
	var (
		statuses []*block.VolumeStatus
		mounts   []*block.MountStatus
	)

	if snap.active != nil && snap.systemDisk != "" {
		var disk blockDevice

		for _, d := range snap.devices {
			if d.DevName == snap.systemDisk {
				disk = d
			}
		}

		for _, v := range systemVolumes(snap.image.Version, snap.machine.UEFI, disk.SizeBytes) {
			if v.label != "META" && v.label != "STATE" && v.label != "EPHEMERAL" {
				continue
			}

			location := fmt.Sprintf("/dev/%s%d", snap.systemDisk, v.index)

			vs := block.NewVolumeStatus(block.NamespaceName, v.label)
			spec := vs.TypedSpec()
			spec.Phase = block.VolumePhaseReady
			spec.Type = block.VolumeTypePartition
			spec.Location, spec.MountLocation = location, location
			spec.ParentLocation = "/dev/" + snap.systemDisk
			spec.PartitionIndex = v.index
			spec.SetSize(v.size)
			spec.Filesystem = v.fs
			spec.MountSpec.TargetPath = v.mountPoint
			statuses = append(statuses, vs)

			if v.mountPoint != "" {
				ms := block.NewMountStatus(block.NamespaceName, v.label)
				ms.TypedSpec().Spec.VolumeID = v.label
				ms.TypedSpec().Source = location
				ms.TypedSpec().Target = v.mountPoint
				ms.TypedSpec().Filesystem = v.fs
				ms.TypedSpec().ProjectQuotaSupport = v.label == "EPHEMERAL"
				mounts = append(mounts, ms)
			}
		}
	}

	if err := replaceAll(ctx, st, block.NewVolumeStatus(block.NamespaceName, "").Metadata(), statuses); err != nil {
		return err
	}

	return replaceAll(ctx, st, block.NewMountStatus(block.NamespaceName, "").Metadata(), mounts)
}
