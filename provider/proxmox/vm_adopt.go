package proxmox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/config"
	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

// A create first looks for a VM it made before and could not hand over: the
// provider or the CLI was killed, or the answer was lost. Such a VM carries
// the create's identity (pve identity.go); it is adopted and brought to the
// inputs by converge, instead of a second VM being made.

// adoptionMaxAge is how old an inventory the creates of one run share to
// look for their interrupted runs' VMs in any case. Those were made before
// this run started; only a create task an interrupted run left running
// (its VM gets its tags when it ends) can show in a later read, and such a
// VM is waited for (awaitForeignCreates). An older read of this run (the
// TalosCluster plan's, or another create's) is shared too when it shows
// no VM that another client was still creating or cloning (pve
// SettledInventory, which also says what such a read can miss: a killed
// run's create request Proxmox handled only after it). Clones always read
// afresh, after waiting for the clones of their source (findOwn).
var adoptionMaxAge = 3 * time.Second

// ownVM is a VM found with the create's identity.
type ownVM struct {
	pve.ClusterVM
	// handed: it carries the owner tag (its create finished); otherwise it
	// carries the creating tag or line.
	handed bool
}

// findOwn lists the VMs that carry identity id. For a clone it first waits
// for clones of the same source that another process started and that
// still run (a killed run's clone goes on in Proxmox, and its VM shows the
// identity only once the copy ends), then also reads the description of
// the VMs that could be that clone. For a create from parameters it waits
// likewise for the creates that another process still runs on the node
// (see awaitForeignCreates).
//
// shared: the inventory may be one this run read before (see
// adoptionMaxAge and pve SettledInventory), as it may before a VM is made;
// not when looking for the VM this run's own create may just have made, nor
// after waiting for a clone.
func findOwn(ctx context.Context, c *pve.Client, a VirtualMachineArgs, id string, shared bool) ([]ownVM, error) {
	if a.Clone != nil {
		src := cloneSource(a)
		if _, err := awaitForeignTasks(ctx, c, src.Node, "qmclone", src.VMID, "a clone of "+src.String()); err != nil {
			return nil, err
		}
	}
	var (
		inv pve.Inventory
		err error
	)
	if shared && a.Clone == nil {
		inv, err = c.SettledInventory(ctx, adoptionMaxAge)
	} else {
		inv, err = c.Inventory(ctx, 0)
	}
	if err == nil && a.Clone == nil {
		inv, err = awaitForeignCreates(ctx, c, a.Node, inv)
	}
	if err != nil {
		return nil, fmt.Errorf("looking for a VM an interrupted run created for this resource: %w", err)
	}
	var out []ownVM
	for _, g := range inv.Guests {
		if g.Type != "qemu" {
			continue
		}
		switch {
		case slices.Contains(g.Tags, pve.OwnerTag(id, g.VMID)):
			out = append(out, ownVM{ClusterVM: g, handed: true})
		case slices.Contains(g.Tags, pve.CreatingTag(id)):
			out = append(out, ownVM{ClusterVM: g})
		case a.Clone != nil && !g.Template && g.Name == cloneName(a, inv) && !pve.IsCreating(g.Tags):
			cfg, err := c.VMConfig(ctx, pve.VMRef{Node: g.Node, VMID: g.VMID})
			if err != nil && !pve.IsConfigMissing(err) {
				return nil, fmt.Errorf("reading VM %d on node %s to see whether an interrupted run cloned it for "+
					"this resource: %w", g.VMID, g.Node, err)
			}
			if pve.HasCreatingLine(cfg["description"], id) {
				out = append(out, ownVM{ClusterVM: g})
			}
		}
	}
	return out, nil
}

// cloneName is the name a clone gets: the inputs' name, else Proxmox's
// "Copy-of-VM-<source name or VMID>" (qemu-server API2/Qemu.pm clone_vm).
func cloneName(a VirtualMachineArgs, inv pve.Inventory) string {
	if a.Name != nil && *a.Name != "" {
		return *a.Name
	}
	if src, ok := inv.Guest(a.Clone.VMID); ok && src.Name != "" {
		return "Copy-of-VM-" + src.Name
	}
	return "Copy-of-VM-" + strconv.Itoa(a.Clone.VMID)
}

// awaitForeignTasks waits for the tasks of type typ for id on node that
// run and that this process did not start (a clone's task id is its
// source's VMID, a create's the new VM's); what names them in the log.
// waited: there was one. Waiting only delays a create: the task may be
// another program's, whose VM is then left alone. Only ctx bounds the
// wait; WaitTask polls with a growing interval.
func awaitForeignTasks(ctx context.Context, c *pve.Client, node, typ string, id int, what string) (waited bool, err error) {
	running, err := c.ForeignActiveTasks(ctx, node, typ, strconv.Itoa(id))
	if err != nil {
		return false, fmt.Errorf("looking for the %s tasks on node %s that an interrupted run may have started: %w",
			typ, node, err)
	}
	for _, upid := range running {
		pve.Logf(ctx, "%s started before this run is still running (task %s); waiting for it, as it may be "+
			"this resource's VM from an interrupted run", what, typ)
		// its failure is the other run's: only the VM it leaves matters
		if err := c.WaitTask(ctx, upid); err != nil && ctx.Err() != nil {
			return true, err
		}
	}
	return len(running) > 0, nil
}

// awaitForeignCreates returns inv, or a later read once the creates that
// another process ran on node when inv was read have ended. Such a VM
// shows only "lock: create" until its create task ends: Proxmox writes
// that config before it forks the worker, and the whole config, tags
// included, only at the worker's end; a failed worker removes the config
// (qemu-server src/PVE/API2/Qemu.pm create_vm: create_and_lock_config,
// then fork_worker('qmcreate', $vmid, ...), whose $createfn writes the
// config and whose error path unlinks it). A killed run's create whose
// task still runs (disks imported, a busy storage) is such a VM: read
// before its end, it carries no identity, and a second VM would be made.
// Only the inputs' node is waited for: a VM on another node is not
// adopted. A lock with no task behind it (the task died with its node)
// is read once more, in case the task ended between the two reads, and
// then left alone: no identity can be read from it.
func awaitForeignCreates(ctx context.Context, c *pve.Client, node string, inv pve.Inventory) (pve.Inventory, error) {
	for {
		pending := createsToAwait(c.Unsettled(inv), node)
		if len(pending) == 0 {
			return inv, nil
		}
		waited := false
		for _, g := range pending {
			w, err := awaitForeignTasks(ctx, c, node, "qmcreate", g.VMID, fmt.Sprintf("the create of VM %d", g.VMID))
			if err != nil {
				return pve.Inventory{}, err
			}
			waited = waited || w
		}
		next, err := c.Inventory(ctx, 0)
		if err != nil || !waited {
			return next, err
		}
		inv = next
	}
}

// createsToAwait picks, of the guests other clients were creating or
// cloning (pve Client.Unsettled), the VMs being created on node.
func createsToAwait(unsettled []pve.ClusterVM, node string) []pve.ClusterVM {
	var out []pve.ClusterVM
	for _, g := range unsettled {
		if g.Type == "qemu" && g.Lock == "create" && g.Node == node {
			out = append(out, g)
		}
	}
	return out
}

// adoptOwn finds the VM an interrupted create made for this resource and
// returns it, after destroying the extra half-made copies. A create that
// is a replacement (the state still holds a VM for the resource) adopts
// only a VM still being created: a handed-over one may be the very VM it
// replaces, and the VM the state holds is never adopted. A VM on another
// node than the inputs' is not adopted; a half-made one there is destroyed.
//
// shared: see findOwn.
func adoptOwn(ctx context.Context, c *pve.Client, a VirtualMachineArgs, id identity, shared bool) (pve.VMRef, bool, error) {
	found, err := findOwn(ctx, c, a, id.id, shared)
	if err != nil || len(found) == 0 {
		return pve.VMRef{}, false, err
	}
	pick := -1
	for i, vm := range found {
		usable := vm.Node == a.Node && (!vm.handed || id.fresh) &&
			vmResourceID(pve.VMRef{Node: vm.Node, VMID: vm.VMID}) != id.held
		better := pick < 0 || (vm.handed && !found[pick].handed)
		if usable && better {
			pick = i
		}
	}
	var errs []error
	for i, vm := range found {
		if i == pick || vm.handed || vmResourceID(pve.VMRef{Node: vm.Node, VMID: vm.VMID}) == id.held {
			continue
		}
		ref := pve.VMRef{Node: vm.Node, VMID: vm.VMID}
		pve.Logf(ctx, "destroying %s: an interrupted run began creating it for this resource, and %s", ref,
			map[bool]string{true: "another VM is adopted instead", false: "it is not on the node the program names"}[pick >= 0])
		if err := destroyHalfMade(ctx, c, ref); err != nil {
			errs = append(errs, err)
		}
	}
	if pick < 0 {
		return pve.VMRef{}, false, errors.Join(errs...)
	}
	vm := found[pick]
	ref := pve.VMRef{Node: vm.Node, VMID: vm.VMID}
	what := "began creating"
	if vm.handed {
		what = "created, without Pulumi recording it,"
	}
	pve.Warnf(ctx, "adopting %s (%q): an interrupted run %s it for this resource; it is completed instead of a "+
		"second VM being made", ref, vm.Name, what)
	return ref, true, nil
}

// destroyHalfMade stops and destroys a VM an interrupted create left.
func destroyHalfMade(ctx context.Context, c *pve.Client, ref pve.VMRef) error {
	if st, err := c.VMStatus(ctx, ref); err == nil && st.Running() {
		if err := c.StopVM(ctx, ref); err != nil {
			return err
		}
	}
	return c.DeleteVM(ctx, ref)
}

// creatingArgs adds the creating tag to the tags the inputs want, so that
// the VM carries it until it is handed over: given tags are kept, and when
// the program does not manage tags, the VM's own (live) ones.
func creatingArgs(a VirtualMachineArgs, live pve.VMConfig, id string) VirtualMachineArgs {
	if id == "" {
		return a
	}
	tags := a.Tags
	if tags == nil {
		tags = pve.UserTags(pve.SplitTags(live["tags"]))
	}
	a.Tags = append(slices.Clone(tags), pve.CreatingTag(id))
	return a
}

// handOver replaces the creating tag and line by the owner tag, once the
// create gives the VM to Pulumi; system tags copied from a clone source go
// too. It asks nothing of Proxmox when there is nothing to change.
//
// With onlyIfCreating, a VM that does not carry this identity's creating
// tag or line is left as it is: an update finishes what a create could not
// (its hand-over failed), but does not claim a VM that was imported.
func handOver(ctx context.Context, c *pve.Client, ref pve.VMRef, id string, onlyIfCreating bool, live pve.VMConfig) error {
	if live == nil {
		var err error
		if live, err = c.VMConfig(ctx, ref); err != nil {
			return err
		}
	}
	tags := pve.SplitTags(live["tags"])
	if onlyIfCreating && !slices.Contains(tags, pve.CreatingTag(id)) && !pve.HasCreatingLine(live["description"], id) {
		return nil
	}
	want := append(pve.UserTags(tags), pve.OwnerTag(id, ref.VMID))
	set := map[string]any{}
	var remove []string
	if strings.Join(normalizeTags(want), ";") != strings.Join(normalizeTags(tags), ";") {
		set["tags"] = strings.Join(normalizeTags(want), ";")
	}
	if desc := pve.WithoutCreatingLine(live["description"]); desc != live["description"] {
		if desc == "" {
			remove = append(remove, "description")
		} else {
			set["description"] = desc
		}
	}
	return c.UpdateVMConfig(ctx, ref, set, remove)
}

// interruptedOwnVM says (as a warning for the preview) why a VM that holds
// the vmId the inputs pin is no conflict: an interrupted run made it for
// this resource, or it is being cloned and may be. "" when it is another's.
func interruptedOwnVM(ctx context.Context, c *pve.Client, vm pve.ClusterVM, id string) string {
	if id == "" || vm.Type != "qemu" {
		return ""
	}
	ref := pve.VMRef{Node: vm.Node, VMID: vm.VMID}
	own := slices.Contains(vm.Tags, pve.CreatingTag(id)) || slices.Contains(vm.Tags, pve.OwnerTag(id, vm.VMID))
	if !own && len(pve.SystemTags(vm.Tags)) == 0 {
		cfg, err := c.VMConfig(ctx, ref)
		if err == nil && pve.HasCreatingLine(cfg["description"], id) {
			own = true
		} else if err == nil && vm.Lock == "clone" && cfg["name"] == "" {
			return fmt.Sprintf("%s is being cloned right now; if an interrupted run of this program started "+
				"the clone, `pulumi up` adopts it, otherwise the create fails: vmId %d is taken", ref, vm.VMID)
		}
	}
	if !own {
		return ""
	}
	return fmt.Sprintf("%s holds vmId %d: an interrupted run created it for this resource, and `pulumi up` "+
		"adopts and finishes it", ref, vm.VMID)
}

// adoptionPreview says at preview that the create will adopt a VM an
// interrupted run left, when the inventory shows one with the resource's
// tags (a clone whose copy had not ended shows only to the create).
func adoptionPreview(ctx context.Context, id identity) string {
	c, err := config.Client(ctx)
	if err != nil || id.id == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, liveReadTimeout)
	defer cancel()
	inv, err := c.Inventory(ctx, liveMaxAge)
	if err != nil {
		return ""
	}
	for _, g := range inv.Guests {
		creating := slices.Contains(g.Tags, pve.CreatingTag(id.id))
		if creating || (id.fresh && slices.Contains(g.Tags, pve.OwnerTag(id.id, g.VMID))) {
			return fmt.Sprintf("VM %d %q on node %s was created for this resource by an interrupted run: "+
				"it is adopted and finished, not made a second time", g.VMID, g.Name, g.Node)
		}
	}
	return ""
}
