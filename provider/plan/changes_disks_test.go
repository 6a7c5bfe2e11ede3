package plan

import (
	"slices"
	"strings"
	"testing"
)

// TestCompareDataDisks: Proxmox hot-plugs only scsi and virtio disks, so a
// data disk added or removed on sata restarts the VM (its update applies the
// pending disk: review s14b M1); elsewhere, and a storage or size change on
// any bus, is a live VM change the node's gate follows.
func TestCompareDataDisks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		bus      string
		old, new []DataDisk
		want     Action
		moved    bool
		changed  bool
		reason   string
		summary  string
	}{
		{
			name: "sata: a disk added", bus: "sata", new: []DataDisk{{SizeGiB: 8}}, want: ActionReboot,
			reason:  "data disks - → sata1:8:local-lvm (a sata disk is added or removed only at a restart)",
			summary: "2 rebooted one at a time (data disks - → sata1:8:local-lvm (a sata disk is added or removed only at a restart)): lab-workers-1, lab-workers-2",
		},
		{
			name: "sata: a disk removed", bus: "sata", old: []DataDisk{{SizeGiB: 8}, {SizeGiB: 4}}, new: []DataDisk{{SizeGiB: 8}},
			want: ActionReboot, reason: "data disks sata1:8:local-lvm,sata2:4:local-lvm → sata1:8:local-lvm (a sata disk",
		},
		{
			name: "sata: a disk's own storage changes", bus: "sata", old: []DataDisk{{SizeGiB: 8}}, new: []DataDisk{{SizeGiB: 8, Storage: "fast"}},
			want: ActionUpdate, moved: true,
			summary: "2 updated live, no reboot (data disks sata1:8:local-lvm → sata1:8:fast; disks moved one node at a time, cluster health checked after each): lab-workers-1, lab-workers-2",
		},
		{
			name: "sata: a disk grows", bus: "sata", old: []DataDisk{{SizeGiB: 8}}, new: []DataDisk{{SizeGiB: 16}},
			want: ActionUpdate, changed: true, reason: "data disks sata1:8:local-lvm → sata1:16:local-lvm",
		},
		{
			name: "scsi: a disk added", bus: "scsi", new: []DataDisk{{SizeGiB: 8}}, want: ActionUpdate, changed: true,
			summary: "2 updated live, no reboot (data disks - → scsi1:8:local-lvm; disks changed one node at a time, cluster health checked after each): lab-workers-1, lab-workers-2",
		},
		{
			name: "virtio: a disk removed", bus: "virtio", old: []DataDisk{{SizeGiB: 8}}, want: ActionUpdate, changed: true,
			reason: "data disks virtio1:8:local-lvm → -",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := baseSpec()
			spec.DiskInterface = tt.bus
			spec.WorkerPools[0].DataDisks = tt.old
			old := mustComputeState(spec)
			spec.WorkerPools[0].DataDisks = tt.new
			s := Compare(old, mustCompute(t, spec, roomy(), old).State())
			if names := s.Names(tt.want); !slices.Equal(names, []string{"lab-workers-1", "lab-workers-2"}) || len(s.Nodes) != 2 {
				t.Fatalf("%v: %v (summary %q)", tt.want, names, s)
			}
			c := s.Nodes[0]
			if c.Moved != tt.moved || c.DisksChanged != tt.changed {
				t.Errorf("moved %t, changed %t; want %t, %t", c.Moved, c.DisksChanged, tt.moved, tt.changed)
			}
			// the gate key that follows the change (the component warns
			// when the stored gate lacks it)
			if !slices.Equal(c.GateKeys, []string{"dataDisks"}) {
				t.Errorf("gate keys %q, want dataDisks", c.GateKeys)
			}
			if tt.reason != "" && !slices.ContainsFunc(c.Reasons, func(r string) bool { return strings.Contains(r, tt.reason) }) {
				t.Errorf("no reason %q in %q", tt.reason, c.Reasons)
			}
			if tt.summary != "" && s.String() != tt.summary {
				t.Errorf("summary = %q\nwant      %q", s, tt.summary)
			}
		})
	}
}
