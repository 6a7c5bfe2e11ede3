package proxmox

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

// memoryNeed is the memory in MiB a change asks of its node at the next
// start: all of it for a new VM, the growth for an existing one. 0 means
// nothing to check: the memory is not given or does not grow, or the VM
// will not run (started: false, a template).
func memoryNeed(a VirtualMachineArgs, old *VirtualMachineArgs) int {
	if a.Memory == nil || !wantsRunning(a) {
		return 0
	}
	if old == nil {
		return a.Memory.Dedicated
	}
	if old.Memory == nil || !wantsRunning(*old) {
		return 0 // what the VM has now is not known from the inputs
	}
	return max(a.Memory.Dedicated-old.Memory.Dedicated, 0)
}

// memoryWarning says, with the numbers, when needMiB does not fit the free
// memory of the node; "" when it fits or the node's memory is unknown. It is
// a warning, not an error: other VMs may stop before this one starts.
// othersMiB is what other VMs this program creates on the node will take.
// startedMiB is what VMs this program started take that n does not count
// yet (n was read before they started: pve.CheckNodes).
func memoryWarning(a VirtualMachineArgs, old *VirtualMachineArgs, needMiB int, n pve.NodeInfo, othersMiB, others, startedMiB int) string {
	if needMiB <= 0 || n.MaxMem == 0 {
		return ""
	}
	const mib = 1 << 20
	total, used := int(n.MaxMem/mib), int(min(n.Mem, n.MaxMem)/mib)
	free := total - used
	if needMiB+othersMiB+startedMiB <= free {
		return ""
	}
	var b strings.Builder
	if old == nil {
		fmt.Fprintf(&b, "memory.dedicated: the VM needs %d MiB ", needMiB)
	} else {
		fmt.Fprintf(&b, "memory.dedicated: growing the VM from %d to %d MiB needs %d MiB more ",
			old.Memory.Dedicated, a.Memory.Dedicated, needMiB)
	}
	fmt.Fprintf(&b, "but node %s has %d MiB free (%d MiB total, %d MiB in use)", n.Name, free, total, used)
	if startedMiB > 0 {
		fmt.Fprintf(&b, ", VMs this program has just started take %d MiB of it", startedMiB)
	}
	if others > 0 {
		fmt.Fprintf(&b, ", and %d other new VM(s) of this program will take %d MiB of it", others, othersMiB)
	}
	b.WriteString(". Proxmox will refuse to start it (kvm: cannot set up guest memory: Cannot allocate memory) " +
		"unless other VMs on the node stop first. Give it less memory, or place it on another node.")
	return b.String()
}

// checkMemory records what a new VM will take on its node and returns the
// warning for it, if any. n is the node as a list read at at showed it
// (pve.CheckNodes): the VMs this process started since count with their
// claims. A warning is made again from a list read afresh, so that its
// numbers are what Proxmox shows now.
func checkMemory(ctx context.Context, c *pve.Client, name string, a VirtualMachineArgs, old *VirtualMachineArgs, n pve.NodeInfo, at time.Time) string {
	need := memoryNeed(a, old)
	claims := c.MemoryClaims()
	var othersMiB, others int
	if old != nil || need == 0 {
		claims.Release(name)
		othersMiB, others = claims.Claimed(n.Name, name)
	} else {
		othersMiB, others = claims.Claim(n.Name, name, need)
	}
	w := memoryWarning(a, old, need, n, othersMiB, others, claims.StartedSince(n.Name, name, at))
	if w == "" {
		return ""
	}
	nodes, at, err := c.CheckNodes(ctx, true)
	if err != nil {
		return w
	}
	for _, fresh := range nodes {
		if fresh.Name == n.Name {
			return memoryWarning(a, old, need, fresh, othersMiB, others, claims.StartedSince(n.Name, name, at))
		}
	}
	return w
}
