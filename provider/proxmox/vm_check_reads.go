package proxmox

import (
	"context"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

// checkReads is the client as one Check uses it: the node's storages and the
// clone source's configuration, which several checks read, are asked once.
// Only answers are kept; a failed read is asked again by the next check.
type checkReads struct {
	*pve.Client
	storages map[string][]pve.StorageInfo
	configs  map[pve.VMRef]pve.VMConfig
}

func newCheckReads(c *pve.Client) *checkReads {
	return &checkReads{Client: c, storages: map[string][]pve.StorageInfo{}, configs: map[pve.VMRef]pve.VMConfig{}}
}

// Storages lists the storages available on node.
func (r *checkReads) Storages(ctx context.Context, node string) ([]pve.StorageInfo, error) {
	if s, ok := r.storages[node]; ok {
		return s, nil
	}
	s, err := r.Client.Storages(ctx, node)
	if err == nil {
		r.storages[node] = s
	}
	return s, err
}

// StorageOn finds a storage on node: in the node's list when this Check
// read it, else as pve.Client.StorageOn finds it (the cluster's inventory
// where it reports the storage, the node's list otherwise).
func (r *checkReads) StorageOn(ctx context.Context, node, name string) (pve.StorageInfo, bool, error) {
	if list, ok := r.storages[node]; ok {
		for _, s := range list {
			if s.Name == name {
				return s, true, nil
			}
		}
		return pve.StorageInfo{}, false, nil
	}
	return r.Client.StorageOn(ctx, node, name)
}

// VMConfig reads the configuration of a VM.
func (r *checkReads) VMConfig(ctx context.Context, ref pve.VMRef) (pve.VMConfig, error) {
	if cfg, ok := r.configs[ref]; ok {
		return cfg, nil
	}
	cfg, err := r.Client.VMConfig(ctx, ref)
	if err == nil {
		r.configs[ref] = cfg
	}
	return cfg, err
}

// FindVolume looks up an ISO or disk image a VM names. A Check only
// advises (Proxmox refuses a create that names a missing volume), so it
// may answer from the storage's content list this provider read moments
// ago, such as the one a DownloadFile read after making the file (see
// pve.FindRecentVolume).
func (r *checkReads) FindVolume(ctx context.Context, node, storage, volid string) (pve.Volume, bool, error) {
	v, found, err := r.Client.FindRecentVolume(ctx, node, storage, volid, checkVolumeMaxAge)
	if err != nil || found {
		return v, found, err
	}
	// a missing volume fails the Check: only a list read moments ago says so
	return r.Client.FindRecentVolume(ctx, node, storage, volid, pve.RecentVolumeMaxAge)
}

// checkVolumeMaxAge is how old that list may be for a VM's Check. A new
// cluster's VMs are checked in two groups, the control planes' right after
// the ISO downloads and the workers' once the control planes' VMs are
// created and started (plan.Waits.AfterControlPlaneVMs): seconds later on
// the lab, more on a busy Proxmox. Longer than pve.RecentVolumeMaxAge,
// which also serves a shared download's create. Only a volume found is
// taken from it: a volume missing fails the Check, so that is read again
// unless the list is moments old.
const checkVolumeMaxAge = 30 * time.Second
