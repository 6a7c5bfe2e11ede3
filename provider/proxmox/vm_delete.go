package proxmox

import (
	"context"
	"fmt"
	"strings"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

// locateMovedVM finds a VM that is no longer on the node the state names:
// migrated or relocated by HA, it keeps its VMID. The VM found under that
// VMID is the same one when it has the state's SMBIOS uuid or name;
// otherwise the VMID now belongs to another VM, which is left alone.
func locateMovedVM(ctx context.Context, c *pve.Client, ref pve.VMRef, st VirtualMachineState) (pve.VMRef, bool, error) {
	vms, err := c.ClusterVMs(ctx)
	if err != nil {
		return pve.VMRef{}, false, fmt.Errorf("%s does not exist on that node; looking for it on the other nodes: %w", ref, err)
	}
	for _, vm := range vms {
		if vm.VMID != ref.VMID || vm.Node == ref.Node {
			continue
		}
		moved := pve.VMRef{Node: vm.Node, VMID: vm.VMID}
		if st.Name != nil && *st.Name != "" && vm.Name == *st.Name {
			return moved, true, nil
		}
		if st.SmbiosUUID != "" {
			cfg, err := c.VMConfig(ctx, moved)
			if err != nil && !pve.IsConfigMissing(err) {
				return pve.VMRef{}, false, fmt.Errorf("reading %s to see whether it is the VM of this resource: %w", moved, err)
			}
			if strings.EqualFold(pve.ParsePropString(cfg["smbios1"]).KV["uuid"], st.SmbiosUUID) {
				return moved, true, nil
			}
		}
		pve.Logf(ctx, "VMID %d now belongs to VM %q on node %s, which is not this resource's VM; leaving it alone",
			vm.VMID, vm.Name, vm.Node)
	}
	return pve.VMRef{}, false, nil
}

// reusedBy reports the VM that now holds the state's VMID on its node when
// it is not the resource's VM: this one was deleted outside Pulumi and
// Proxmox gave the free VMID (GET /cluster/nextid hands out the lowest
// free one) to a VM of another stack or person. It tells them apart by
// the SMBIOS uuid, which Proxmox generates for every new VM and the state
// records; without one on either side it cannot tell and answers "".
func reusedBy(ctx context.Context, c *pve.Client, ref pve.VMRef, st VirtualMachineState) (string, error) {
	if st.SmbiosUUID == "" {
		return "", nil
	}
	cfg, err := c.VMConfig(ctx, ref)
	if pve.IsConfigMissing(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading %s to see whether it is still this resource's VM: %w", ref, err)
	}
	return otherVM(ref, st, cfg["name"], pve.ParsePropString(cfg["smbios1"]).KV["uuid"]), nil
}

// otherVM is reusedBy's verdict on the VM found under ref, named name with
// SMBIOS uuid: another VM when both differ from the state's (a rename in
// Proxmox, or a new uuid set there, alone does not make it another VM).
func otherVM(ref pve.VMRef, st VirtualMachineState, name, uuid string) string {
	if st.SmbiosUUID == "" || uuid == "" || strings.EqualFold(uuid, st.SmbiosUUID) ||
		(st.Name != nil && *st.Name == name) {
		return ""
	}
	return fmt.Sprintf("VMID %d on node %s now belongs to another VM (%q, SMBIOS uuid %s; this resource's was %s)",
		ref.VMID, ref.Node, name, uuid, st.SmbiosUUID)
}
