package vmwatch

import (
	"context"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

// proxmox looks through the provider's Proxmox client, in the cluster
// inventory (GET /cluster/resources): it follows a VM to whichever node it
// runs on, says "unknown" for the guests of an offline node, and holds the
// nodes' uptimes. One read serves every VM it shows, so the waits of
// parallel operations (one per node) share it.
type proxmox struct{ c *pve.Client }

// Proxmox is a Source over the provider's Proxmox client.
func Proxmox(c *pve.Client) Source { return proxmox{c} }

func (s proxmox) Look(ctx context.Context, vm VM, maxAge time.Duration) Look {
	inv, err := s.c.Inventory(ctx, maxAge)
	if err != nil {
		return Look{At: time.Now()}
	}

	at := inv.At
	if at.IsZero() {
		at = time.Now()
	}

	return lookIn(inv, vm.VMID, at)
}

// StartedAt is when this process last started VM vmid (pve.Client.StartedAt).
func (s proxmox) StartedAt(vmid int) (time.Time, bool) { return s.c.StartedAt(vmid) }

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
