package proxmox

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
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
//   - the skip is only for reads: Diff's withLive still turns a VM deleted
//     outside Pulumi into a replace (Create) and a stopped or drifted one
//     into an Update, and a change of the provider's endpoint or token is
//     no replace, so unchanged inputs can still reach a write. Check
//     records the skip per URN (noteSkipped) and that Create or Update runs
//     the skipped checks before its first write (recheckSkipped), failing
//     with Check's text; a no-op preview and a fresh create read nothing
//     more;
//   - `pulumi refresh` reads everything; a later change of any input runs
//     every check again;
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

// skippedCheck is what a Check that skipped the cluster checks saw.
type skippedCheck struct {
	name string
	a    VirtualMachineArgs
	old  *VirtualMachineArgs
}

// skipped holds, per URN, the last Check of this process that skipped the
// cluster checks; a Check that ran them removes the entry. Per process, as
// the engine runs a resource's Check and its Create or Update in the same
// provider process (framework.WithRequestFacts keeps its facts the same way).
var skipped sync.Map

func noteSkipped(ctx context.Context, name string, a VirtualMachineArgs, old *VirtualMachineArgs) {
	if urn := framework.URN(ctx); urn != "" {
		skipped.Store(urn, skippedCheck{name: name, a: a, old: old})
	}
}

func forgetSkipped(ctx context.Context) {
	if urn := framework.URN(ctx); urn != "" {
		skipped.Delete(urn)
	}
}

// recheckSkipped runs, before a Create or Update writes, the checks this
// process's Check of the resource skipped for unchanged inputs (a VM
// deleted, stopped or drifted outside Pulumi, or another endpoint): the
// cluster may have lost a bridge, storage or privilege since they passed.
// It fails as Check would have, naming the input. Nothing is read when
// Check ran every check (a fresh create, changed inputs).
func recheckSkipped(ctx context.Context, c *pve.Client, a VirtualMachineArgs, verb string) error {
	urn := framework.URN(ctx)
	if urn == "" {
		return nil
	}
	e, ok := skipped.LoadAndDelete(urn)
	if !ok {
		return nil
	}
	s, _ := e.(skippedCheck)
	if !reflect.DeepEqual(s.a, a) {
		return nil // not the inputs that Check skipped (never seen: a Check in between removes the entry)
	}
	failures, err := checkVMFully(pve.Planning(ctx), c, s.name, a, s.old, unknowns{})
	if err != nil {
		return err
	}
	if len(failures) == 0 {
		return nil
	}
	msgs := make([]string, 0, len(failures))
	for _, f := range failures {
		msgs = append(msgs, f.Property+": "+f.Reason)
	}
	return fmt.Errorf("VirtualMachine %s cannot be %s, nothing was written: %s (the preview did not check these unchanged "+
		"inputs against the cluster again; fix them or the cluster, then run the up again)", s.name, verb, strings.Join(msgs, "; "))
}

// decodeOldInputs is the last accepted inputs (nil for a new VM, or when they
// no longer decode). Inputs equal, value for value, to the new ones (a no-op
// preview: Pulumi hands back what the last Check returned) decode to the new
// inputs' args a, so they are not decoded a second time: infer's decoding
// (reflection over every field, and the defaults walk) is most of a no-op
// Check's cost. The copy shares a's slices and maps; Check only reads both.
func decodeOldInputs(oldInputs, newInputs property.Map, a VirtualMachineArgs) *VirtualMachineArgs {
	if oldInputs.Len() == 0 {
		return nil
	}
	if oldInputs.Equals(newInputs) {
		o := a
		return &o
	}
	// decoded with its own context: DefaultCheck remembers the encoder of
	// its last call for the response, which must be the new inputs'
	if o, f, err := infer.DefaultCheck[VirtualMachineArgs](context.Background(), oldInputs); err == nil && len(f) == 0 {
		return &o
	}
	return nil
}
