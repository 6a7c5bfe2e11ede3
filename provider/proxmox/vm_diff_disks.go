package proxmox

import (
	"fmt"

	p "github.com/pulumi/pulumi-go-provider"
)

// diffDisks reports disk changes keyed by interface, since that is how
// converge applies them: a disk on the same interface is updated field by
// field (at its new list index), a disk whose interface is gone is deleted
// with its data (at its old index), and a new interface is a new blank
// disk. When a deleted disk and an added one share a list index (an
// interface renamed in place) the element is reported once, as an update of
// the whole element; Check warns that the old disk's data goes.
func diffDisks(o, n []VirtualMachineDisk, record func(string, p.DiffKind)) {
	if o == nil && n == nil {
		return
	}
	if (o == nil) != (n == nil) && len(o)+len(n) == 0 {
		kind := p.Add
		if n == nil {
			kind = p.Delete
		}
		record("disks", kind)
		return
	}
	oldAt := map[string]int{}
	for j, d := range o {
		oldAt[d.Interface] = j
	}
	newIfaces := map[string]bool{}
	added := map[int]bool{}
	for i, d := range n {
		newIfaces[d.Interface] = true
		j, ok := oldAt[d.Interface]
		if !ok {
			added[i] = true
			continue
		}
		before, after := flatten(o[j]), flatten(d)
		for _, k := range unionKeys(before, after) {
			ov, inOld := before[k]
			nv, inNew := after[k]
			path := fmt.Sprintf("disks[%d].%s", i, k)
			switch {
			case inOld && inNew && ov != nv:
				record(path, p.Update)
			case inNew && !inOld:
				record(path, p.Add)
			case inOld && !inNew:
				record(path, p.Delete)
			}
		}
	}
	for j, d := range o {
		if newIfaces[d.Interface] {
			continue
		}
		path := fmt.Sprintf("disks[%d]", j)
		if added[j] {
			delete(added, j)
			record(path, p.Update)
			continue
		}
		record(path, p.Delete)
	}
	for i := range n {
		if added[i] {
			record(fmt.Sprintf("disks[%d]", i), p.Add)
		}
	}
}

// removedDiskWarnings says, for Check, which disks an update deletes.
func removedDiskWarnings(old *VirtualMachineArgs, news VirtualMachineArgs) []string {
	var out []string
	for _, d := range removedDisks(old, news) {
		out = append(out, fmt.Sprintf("disk %s (%d GiB on %s) is no longer listed in disks: the update deletes it and "+
			"the data on it. To keep the disk, list it again with interface %s; a disk moved to another interface "+
			"is a new blank disk, not the same one", d.Interface, d.Size, d.Storage, d.Interface))
	}
	return out
}

// removedDisks lists the disks of old whose interface news no longer has:
// an update deletes them and their data. Disks not given are not managed.
func removedDisks(old *VirtualMachineArgs, news VirtualMachineArgs) []VirtualMachineDisk {
	if old == nil || news.Disks == nil {
		return nil
	}
	keep := map[string]bool{}
	for _, d := range news.Disks {
		keep[d.Interface] = true
	}
	var out []VirtualMachineDisk
	for _, d := range old.Disks {
		if !keep[d.Interface] {
			out = append(out, d)
		}
	}
	return out
}
