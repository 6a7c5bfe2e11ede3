package cluster

import (
	"context"
	"fmt"
)

// proxmoxInventory reads through the provider's own Proxmox client. Until
// the Proxmox client lands on main this says so.
func proxmoxInventory(context.Context) (Inventory, error) {
	return nil, fmt.Errorf("this build has no Proxmox client (provider/pve) to read host capacity and VMs from")
}
