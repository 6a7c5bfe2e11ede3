package proxmox

import (
	"strings"

	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

// StatusUnfinished is the status a create or update that failed part-way
// stores (the VM's power state is not known then). The engine keeps that
// operation's errors (init errors) and runs the next update even when Diff
// finds nothing (pulumi pkg v3.274.1 resource/deploy/step_generator.go,
// "unchanged, but there were initialization errors"), yet the stack's
// outputs, all TalosCluster reads, do not show them: the status does, and
// Unchanged refuses it. It is the word Proxmox lists for a guest of an
// offline node, but means no such thing here: readers of the state (the
// offline preview) compare with this constant, not with the word.
const StatusUnfinished = "unknown"

// Unchanged reports whether an update that gives the VM whose state is st
// the inputs args finds no change to make: Diff compares the inputs with
// the state (diffVM), and, after a refresh (`pulumi up --refresh` reads the
// VM before Diff), with the state Read makes of the VM's live configuration
// (live, as Proxmox answers it now; nil: not known, so not unchanged).
// The caller checks what Diff also asks Proxmox (withLive): that the VM is
// there under st's VMID on st's node, and runs.
//
// TalosCluster registers the nodes whose VM is unchanged (and whose apply
// leaves the node alone) as its create did, without the rollout's waits
// (cluster.settledNodes): a VM update there would not wait its turn.
func Unchanged(st VirtualMachineState, args VirtualMachineArgs, live pve.VMConfig) bool {
	if live == nil || st.VMID == 0 || st.Status == StatusUnfinished || diffVM(st, args).HasChanges {
		return false
	}
	running := pve.VMStatus{Status: "running", QMPStatus: "running"}
	refreshed := stateFrom(observation{Ref: pve.VMRef{Node: st.Node, VMID: st.VMID}, Config: live, Status: running},
		st.VirtualMachineArgs, nil)
	// The UUID is an output here (the inputs leave it to Proxmox), so diffVM
	// does not see it change; a refresh stores the live one, and what binds
	// it (a ConfigurationApply's machineId) would change.
	return strings.EqualFold(refreshed.SmbiosUUID, st.SmbiosUUID) && !diffVM(refreshed, args).HasChanges
}
