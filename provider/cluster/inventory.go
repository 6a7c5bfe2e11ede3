package cluster

import (
	"context"
	"fmt"
)

// proxmoxInventory reads from the provider's own Proxmox client.
func proxmoxInventory(ctx context.Context) (Inventory, error) {
	return nil, fmt.Errorf("the Proxmox client is not available yet")
}
