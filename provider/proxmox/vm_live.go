package proxmox

import (
	"context"
	"fmt"
	"time"

	p "github.com/pulumi/pulumi-go-provider"

	"github.com/proxmoxtalos/proxmoxtalos/provider/backoff"
	"github.com/proxmoxtalos/proxmoxtalos/provider/config"
	"github.com/proxmoxtalos/proxmoxtalos/provider/internal/enginelog"
	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

// Diff learns what happened to the VM outside Pulumi without a refresh:
// stopped (a failed start, a crash, a host that restarted), deleted, or on
// a node that is down. One read of the cluster's inventory, shared by the
// Diffs of a preview, tells all of it; it never waits for a node.
const (
	liveReadTimeout = 10 * time.Second
	liveMaxAge      = 3 * time.Second
)

// liveKind is what the inventory says of the state's VM.
type liveKind int

const (
	liveAsExpected liveKind = iota
	liveStopped             // should run and does not
	livePaused              // should run and is paused
	liveRunning             // should not run and does
	liveGone                // deleted outside Pulumi
	liveUnknown             // its node is down, or the inventory could not be read
)

// liveFinding is the live check's verdict and the sentence that says it.
type liveFinding struct {
	kind liveKind
	msg  string
}

// judgeLive compares the inventory with the state and the new inputs. It
// is pure: the I/O is in checkLive.
func judgeLive(inv pve.Inventory, st VirtualMachineState, news VirtualMachineArgs) liveFinding {
	vm := vmLabel(st, news)
	g, found := inv.Guest(st.VMID)
	if found && g.Node != st.Node && st.Name != nil && *st.Name != "" && g.Name != *st.Name {
		found = false // the VMID now belongs to another VM
	}
	if !found || g.Type != "qemu" {
		return liveFinding{liveGone, fmt.Sprintf("%s no longer exists in Proxmox (deleted outside Pulumi): "+
			"it will be created again", vm)}
	}
	if inv.Offline[g.Node] || g.Status == pve.StatusNodeDown {
		return liveFinding{liveUnknown, fmt.Sprintf("node %s is offline or does not answer: %s could not be "+
			"checked; `pulumi up` brings it to the program once the node is back", g.Node, vm)}
	}
	switch want := wantsRunning(withTemplate(news, st)); {
	case want && g.Status == "stopped" && !g.Template:
		return liveFinding{liveStopped, vm + " is stopped: it will be started"}
	case want && pve.IsPausedStatus(g.Status):
		return liveFinding{livePaused, vm + " is paused: it will be resumed"}
	case !want && (g.Status == "running" || pve.IsPausedStatus(g.Status)):
		return liveFinding{liveRunning, vm + " is " + g.Status + ": it will be shut down (started: false)"}
	}
	return liveFinding{kind: liveAsExpected}
}

// withTemplate fills an unset template input from the state, as diffVM
// does: it decides whether the VM should run.
func withTemplate(news VirtualMachineArgs, st VirtualMachineState) VirtualMachineArgs {
	if news.Template == nil {
		news.Template = st.Template
	}
	return news
}

// vmLabel names the VM as the user does, and where it is.
func vmLabel(st VirtualMachineState, news VirtualMachineArgs) string {
	where := fmt.Sprintf("VM %d on node %s", st.VMID, st.Node)
	if news.Name != nil && *news.Name != "" {
		return fmt.Sprintf("VM %s (%s)", *news.Name, where)
	}
	return where
}

// checkLive reads the inventory for Diff; a failed read is a finding of
// its own (unknown), not an error that fails the preview.
func checkLive(ctx context.Context, st VirtualMachineState, news VirtualMachineArgs) liveFinding {
	c, err := config.Client(ctx)
	if err != nil {
		return liveFinding{kind: liveAsExpected} // Check has said what is wrong
	}
	ctx, cancel := context.WithTimeout(ctx, liveReadTimeout)
	defer cancel()
	inv, err := c.Inventory(ctx, liveMaxAge)
	if err != nil {
		return liveFinding{liveUnknown, fmt.Sprintf("%s could not be checked: %v", vmLabel(st, news), err)}
	}
	f := judgeLive(inv, st, news)
	if f.kind == liveAsExpected && c.Silent(st.Node) {
		// a cluster member whose API did not answer this run's checks
		// (pve.NodeWait): what Proxmox last heard from it may be old
		return liveFinding{liveUnknown, fmt.Sprintf("node %s does not answer: %s could not be checked; "+
			"`pulumi up` brings it to the program once the node answers again", st.Node, vmLabel(st, news))}
	}
	if f.kind != liveGone && renamedInPlace(inv, st) {
		// the name changed under the same VMID: renamed by someone, or
		// deleted and the VMID given to another VM; the SMBIOS uuid says
		ref := pve.VMRef{Node: st.Node, VMID: st.VMID}
		if other, err := reusedBy(pve.Planning(ctx), c, ref, st); err == nil && other != "" {
			return liveFinding{liveGone, fmt.Sprintf("%s no longer exists in Proxmox (deleted outside Pulumi; %s, "+
				"which is left alone): it will be created again", vmLabel(st, news), other)}
		}
	}
	return f
}

// renamedInPlace reports whether the VM under the state's VMID, on the
// state's node, has another name than the state's.
func renamedInPlace(inv pve.Inventory, st VirtualMachineState) bool {
	g, found := inv.Guest(st.VMID)
	return found && g.Node == st.Node && st.Name != nil && *st.Name != "" && g.Name != *st.Name
}

// withLive adds the live finding to a diff: a VM gone is replaced (deleted
// first: there is nothing to keep, and a pinned vmId is free again); one
// in the wrong power state, or that could not be checked, is updated, so
// that a preview never calls it unchanged. The finding is said as a
// warning on the resource.
func withLive(ctx context.Context, d p.DiffResponse, f liveFinding) p.DiffResponse {
	if f.kind == liveAsExpected {
		return d
	}
	enginelog.Logger(ctx).Warning(f.msg)
	if d.DetailedDiff == nil {
		d.DetailedDiff = map[string]p.PropertyDiff{}
	}
	d.HasChanges = true
	switch f.kind {
	case liveGone:
		d.DetailedDiff["vmId"] = p.PropertyDiff{Kind: p.UpdateReplace}
		d.DeleteBeforeReplace = true
	default:
		if _, ok := d.DetailedDiff["powerState"]; !ok {
			d.DetailedDiff["powerState"] = p.PropertyDiff{Kind: p.Update}
		}
	}
	return d
}

// nodeDownWait bounds how long an update or destroy waits for the VM's node
// to come back (a host restarting takes a minute or two); after that the
// operation fails and says to run it again.
var nodeDownWait = 2 * time.Minute

// nodeDownPoll asks the inventory every 2 s while waiting for a node: one
// cheap read, and a node back is noticed soon.
var nodeDownPoll = backoff.Policy{Initial: 2 * time.Second}

// nodeOffline reports whether the inventory says node is down; a failed
// read answers false: the operation itself will tell.
func nodeOffline(ctx context.Context, c *pve.Client, node string) bool {
	rctx, cancel := context.WithTimeout(ctx, liveReadTimeout)
	defer cancel()
	inv, err := c.Inventory(rctx, 0)
	return err == nil && inv.Offline[node]
}

// awaitNode waits (up to nodeDownWait) for node to be online before an
// operation on vm, instead of retrying each of its calls against a node
// that does not answer.
func awaitNode(ctx context.Context, c *pve.Client, node, vm, what string) error {
	if !nodeOffline(ctx, c, node) {
		return nil
	}
	pve.Logf(ctx, "node %s is offline: waiting up to %s for it to come back before %s %s", node, nodeDownWait, what, vm)
	deadline := time.Now().Add(nodeDownWait)
	// attempt 1 is the check above; each later one follows a pause, the
	// last even if that pause ends after the deadline
	err := backoff.Loop{Policy: nodeDownPoll}.Run(ctx, func(ctx context.Context, n int) (bool, error) {
		if n > 1 && !nodeOffline(ctx, c, node) {
			pve.Logf(ctx, "node %s is back", node)
			return true, nil
		}
		if !time.Now().Before(deadline) {
			return true, fmt.Errorf("node %s is offline and did not come back within %s, so %s was not %s: run `pulumi up` "+
				"again once the node is back (a VM with onBoot: true starts with its node)", node, nodeDownWait, vm, what)
		}
		return false, nil
	})
	if _, ok := backoff.AsExhausted(err); ok {
		// only the context ends this loop
		return fmt.Errorf("waiting for node %s to come back: %w", node, ctx.Err())
	}
	return err
}
