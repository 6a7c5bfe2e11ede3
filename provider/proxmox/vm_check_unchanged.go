package proxmox

import (
	"context"
	"reflect"

	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

// unchangedInputs reports inputs that are, value for value, the ones the
// last accepted Check returned (the old inputs Pulumi keeps in the state),
// with nothing unknown: a no-op preview or `up` of an existing VM.
//
// Such a Check skips the checks against the cluster that those same inputs
// passed before (privileges, bridges, storages, ISO and import volumes, the
// pool, the clone source, a pinned vmId): each reads Proxmox (per host, per
// storage, per permission path), so a preview of N unchanged VMs would pay
// them N times for nothing it can act on. It stays safe because
//   - an `up` that changes nothing sends no Proxmox write, so it needs no
//     privilege and no storage or bridge: there is nothing to refuse;
//   - what changed outside Pulumi is still seen: Diff reads the VM itself
//     (withLive: stopped, deleted, config drift) and `pulumi refresh` reads
//     everything; a later change of any input runs every check again;
//   - the node's state is still checked (the /nodes read is shared by the
//     whole run), so an offline node warns in every preview as before.
func unchangedInputs(old *VirtualMachineArgs, a VirtualMachineArgs, u unknowns) bool {
	return old != nil && len(u) == 0 && reflect.DeepEqual(*old, a)
}

// unchangedDownload is unchangedInputs for a DownloadFile: its privileges
// and storage were checked when these inputs were accepted, and an `up`
// that changes nothing downloads nothing (Read finds a file deleted since).
func unchangedDownload(oldInputs property.Map, a DownloadFileArgs, u unknowns) bool {
	if oldInputs.Len() == 0 || len(u) > 0 {
		return false
	}
	// decoded with its own context, as VirtualMachine.Check does
	old, f, err := infer.DefaultCheck[DownloadFileArgs](context.Background(), oldInputs)
	return err == nil && len(f) == 0 && reflect.DeepEqual(old, a)
}
