package vmwatch

import (
	"context"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

// inventoryAge is how old a cluster inventory may be to serve a look: the
// waits of parallel operations (one per node) share one read.
const inventoryAge = 2 * time.Second

// proxmox looks through the provider's Proxmox client, in the cluster
// inventory (GET /cluster/resources): it follows a VM to whichever node it
// runs on, says "unknown" for the guests of an offline node, and holds the
// nodes' uptimes.
type proxmox struct{ c *pve.Client }

// Proxmox is a Source over the provider's Proxmox client.
func Proxmox(c *pve.Client) Source { return proxmox{c} }

func (s proxmox) Look(ctx context.Context, vm VM) Look {
	inv, err := s.c.Inventory(ctx, inventoryAge)
	if err != nil {
		return Look{At: time.Now()}
	}

	return lookIn(inv, vm.VMID, time.Now())
}

// lookIn is what the inventory says about VM vmid.
func lookIn(inv pve.Inventory, vmid int, at time.Time) Look {
	g, ok := inv.Guest(vmid)
	if !ok || g.Type != "qemu" {
		return Look{At: at, State: "gone"}
	}

	l := Look{At: at, Host: g.Node, Lock: g.Lock, HAState: g.HAState, HostUptime: inv.Uptime[g.Node]}

	switch {
	case inv.Offline[g.Node]:
		// its host is off: it may come back and start its onboot VMs
	case g.Status == "running", g.Status == "stopped", pve.IsPausedStatus(g.Status):
		l.State = g.Status
	}

	return l
}
