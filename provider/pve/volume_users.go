package pve

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// VolumeUsers lists the VMs whose configuration names a volume (a CD drive
// "local:iso/talos.iso,media=cdrom", a disk, a pending change). Proxmox
// keeps no reference count for ISO files and deletes one that VMs still
// boot from; those VMs then refuse to start. Only VMs that can see the
// storage are read: those on node, or every VM when the storage is shared.
func (c *Client) VolumeUsers(ctx context.Context, node, storage, volid string) ([]ClusterVM, error) {
	storages, err := c.Storages(ctx, node)
	if err != nil {
		return nil, err
	}
	shared := slices.ContainsFunc(storages, func(s StorageInfo) bool { return s.Name == storage && s.Shared })
	vms, err := c.ClusterVMs(ctx)
	if err != nil {
		return nil, err
	}
	offline, err := c.offlineNodes(ctx)
	if err != nil {
		return nil, err
	}
	var users []ClusterVM
	for _, vm := range vms {
		if vm.Node != node && !shared {
			continue
		}
		if offline[vm.Node] || vm.Status == StatusNodeDown {
			// Its configuration cannot be read now: count it as a user,
			// since keeping a file is undone by hand and deleting one is not.
			users = append(users, vm)
			continue
		}
		cfg, err := c.VMConfig(ctx, VMRef{Node: vm.Node, VMID: vm.VMID})
		if err != nil {
			if IsConfigMissing(err) {
				continue // deleted since the list
			}
			return nil, fmt.Errorf("reading the configuration of %s to see whether it uses %s: %w", VMRef{Node: vm.Node, VMID: vm.VMID}, volid, err)
		}
		if configNames(cfg, volid) {
			users = append(users, vm)
		}
	}
	return users, nil
}

// configNames: a configuration value names volid as its volume (the part
// before the first comma).
func configNames(cfg VMConfig, volid string) bool {
	for _, v := range cfg {
		if vol, _, _ := strings.Cut(v, ","); vol == volid {
			return true
		}
	}
	return false
}

func (c *Client) offlineNodes(ctx context.Context) (map[string]bool, error) {
	nodes, err := c.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, n := range nodes {
		out[n.Name] = !n.Online
	}
	return out, nil
}
