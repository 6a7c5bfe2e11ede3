package talos

import (
	"context"
	"slices"

	"github.com/proxmoxtalos/proxmoxtalos/provider/config"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/vmwatch"
)

// vmIdsDoc documents the vmIds input of the resources that wait for nodes.
const vmIdsDoc = "The Proxmox VMIDs of the nodes' VMs, by node address (as in `node` and the other address " +
	"inputs), for example `{\"10.5.0.2\": 104}`. While a wait finds a node not answering, the provider asks " +
	"Proxmox (through its configured endpoint, in the cluster's resource list) whether that node's VM runs: first " +
	"2 seconds after the node's first failed attempt, then every 15 seconds per VM for all the waits of the " +
	"provider process, and not while a silence the provider caused lasts (up to 75 seconds after an install or " +
	"upgrade, 105 for a worker's install, 45 after a configuration applied with a reboot, 30 after it started the " +
	"VM, until its node answers; these windows, and only these, are multiplied by the environment variable " +
	"PROXMOXTALOS_VM_WATCH_SCALE of the pulumi command, default 1). A VM seen stopped, paused or deleted in every look for 30 seconds, on a Proxmox node up for 2 minutes or " +
	"more (long enough to have started its onboot VMs), ends every wait on it with an error naming the node and " +
	"the VM, instead of at the timeout (about 32 seconds into the silence, or that window later). Without it, or " +
	"without a Proxmox endpoint, waits last until their timeout. TalosCluster sets it. A change alone does not update the resource."

// withMachines adds to an operation's options the check of the nodes'
// VMs that vmIds names, through the provider's one Proxmox client. Nothing
// when the options have a checker already (tests), vmIds is empty, or the
// provider has no Proxmox endpoint (Talos-only programs).
func withMachines(ctx context.Context, o talosapi.Options, vmIds map[string]int) talosapi.Options {
	if o.Machines != nil || len(vmIds) == 0 {
		return o
	}

	c, err := config.Client(ctx)
	if err != nil {
		return o
	}

	o.Machines = vmwatch.New(vmwatch.Proxmox(c), vmwatch.BookFor(c), machineList(vmIds), vmwatch.Policy{Scale: config.WatchScale(ctx)})

	return o
}

// machineList is vmIds as the VMs to watch, by VMID.
func machineList(vmIds map[string]int) []vmwatch.VM {
	vms := make([]vmwatch.VM, 0, len(vmIds))
	for addr, id := range vmIds {
		if id > 0 {
			vms = append(vms, vmwatch.VM{Address: addr, VMID: id})
		}
	}

	slices.SortFunc(vms, func(a, b vmwatch.VM) int { return a.VMID - b.VMID })

	return vms
}
