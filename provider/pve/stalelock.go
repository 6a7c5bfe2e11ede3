package pve

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
)

// StaleLockError is a VM config lock that no task will ever release: the
// create or clone task that set it died with its node (exit status
// "unexpected status") and so never ran its cleanup. Proxmox lets an API
// token neither edit nor destroy such a VM (qemu-server checks the lock in
// update_vm and destroy_vm; only root@pam may pass skiplock), so retrying
// is pointless: a person must clear it on the node.
type StaleLockError struct {
	Ref  VMRef
	Lock string
}

func (e *StaleLockError) Error() string {
	id, node := e.Ref.VMID, e.Ref.Node
	msg := fmt.Sprintf("VM %d on node %s holds the config lock '%s' and no Proxmox task is working on it: "+
		"the %s task that set it died (a node restart or crash) before it could finish or clean up. "+
		"An API token cannot remove that lock. ", id, node, e.Lock, e.Lock)
	switch e.Lock {
	case "create":
		return msg + fmt.Sprintf("On node %s run `qm unlock %d`, then `pulumi up` finishes the VM; or run "+
			"`qm destroy %d --skiplock --purge --destroy-unreferenced-disks`, then `pulumi refresh` and `pulumi up` "+
			"create it again", node, id, id)
	default: // clone: its disks may be half copied
		return msg + fmt.Sprintf("Its disks may be incomplete: on node %s run `qm destroy %d --skiplock --purge "+
			"--destroy-unreferenced-disks`, then `pulumi refresh` and `pulumi up` clone it again", node, id)
	}
}

// lockedRE matches PVE's "VM is locked (<lock>)" (pve-guest-common
// PVE/AbstractConfig.pm check_lock).
var lockedRE = regexp.MustCompile(`VM is locked \(([a-z-]+)\)`)

// lockOf returns the lock named by a "VM is locked (...)" error, if any.
func lockOf(err error) string {
	if err == nil {
		return ""
	}
	if m := lockedRE.FindStringSubmatch(err.Error()); m != nil {
		return m[1]
	}
	return ""
}

// retryVM is DefaultRetry for an operation on an existing VM, except that a
// create or clone lock that stays without a task (seen on two attempts in a
// row) ends the retries with a StaleLockError instead of waiting out the
// whole timeout. Other locks (backup, migrate, snapshot...) belong to live
// tasks that end by themselves and are waited for.
func (c *Client) retryVM(ctx context.Context, ref VMRef, what string, idempotent bool, op func(ctx context.Context) error) error {
	staleSeen := 0
	return DefaultRetry.Retry(ctx, what, idempotent, func(ctx context.Context) error {
		err := op(ctx)
		lock := lockOf(err)
		if (lock != "create" && lock != "clone") || !c.lockIsStale(ctx, ref, lock) {
			staleSeen = 0
			return err
		}
		if staleSeen++; staleSeen < 2 {
			return err
		}
		return &StaleLockError{Ref: ref, Lock: lock}
	})
}

// lockIsStale reports whether the VM still holds lock while no task that
// could hold it is active on its node: a task for the VM itself, or for a
// clone lock any qmclone (whose task id is the source VM's). Any error
// reading that answers false: keep waiting.
func (c *Client) lockIsStale(ctx context.Context, ref VMRef, lock string) bool {
	var tasks []struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	}
	// raw: see ForeignActiveTasks (Task's decoder panics on odd starttime)
	if err := c.get(ctx, fmt.Sprintf("/nodes/%s/tasks?source=active&limit=500", ref.Node), &tasks); err != nil {
		return false
	}
	for _, t := range tasks {
		if t.ID == strconv.Itoa(ref.VMID) || (lock == "clone" && t.Type == "qmclone") {
			return false
		}
	}
	var st struct {
		Lock string `json:"lock"`
	}
	// raw: see vmStatusOnce
	if err := c.get(ctx, ref.path("/status/current"), &st); err != nil {
		return false
	}
	return st.Lock == lock
}
