package cluster

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
)

// warnUngatedDisks logs markUngatedDisks' warning, for comp, and returns it.
func (c *Component) warnUngatedDisks(ctx *pulumi.Context, comp *TalosCluster, cluster string, creds *talosapi.Credentials,
	offline *stackState, s *plan.Summary) []string {
	w := c.markUngatedDisks(ctx, cluster, creds, offline, s)
	if w == "" {
		return nil
	}
	_ = ctx.Log.Warn(w, &pulumi.LogArgs{Resource: comp})
	return []string{w}
}

// markUngatedDisks finds the nodes whose disk change only a healthGate.vm
// key follows (plan.NodeChange.GateKeys) while the gate their apply stored
// lacks that key: written by a provider before the key, it compares as no
// change (talos vmChanged), so no health check follows the node's VM
// change. Any `pulumi up` since the provider's upgrade records the key in
// the apply's state (a state-only update: talos gateKeysAdded), so such a
// gate means no up ran since. (A stack last updated by a provider built
// from main between the key and that update, never released, holds the key
// in the apply's inputs only; its check then sees the change,
// vmChangedByCheck, and the warning errs on the safe side.) It marks them
// Unchecked for the summary and returns the warning; "" when there are
// none or the state cannot be read (offline: that state, read already).
func (c *Component) markUngatedDisks(ctx *pulumi.Context, cluster string, creds *talosapi.Credentials,
	offline *stackState, s *plan.Summary) string {
	if !slices.ContainsFunc(s.Nodes, func(n plan.NodeChange) bool { return len(n.GateKeys) > 0 }) {
		return "" // no stack read for any other update
	}
	st := offline
	if st == nil {
		resources, err := c.readState(ctx)
		if err != nil {
			return ""
		}
		if st, err = collectStackState(resources, cluster, "to check the nodes' health gates"); err != nil {
			return ""
		}
	}
	var names, keys []string
	for i := range s.Nodes {
		n := &s.Nodes[i]
		a, ok := st.applied[n.Name]
		if len(n.GateKeys) == 0 || !ok || creds != nil && !a.issuedBy(creds.CA) {
			continue
		}
		for _, k := range n.GateKeys {
			if !slices.Contains(gateKeys(a.gateVM), k) {
				n.Unchecked = true
				if !slices.Contains(keys, k) {
					keys = append(keys, k)
				}
			}
		}
		if n.Unchecked {
			names = append(names, n.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: the health gate stored for %s lacks %s (written by an older provider), so the disk change "+
		"goes from node to node with no health check in between. Cancel, run pulumi up once without the disk change "+
		"(it only records the gates in the state; no node is touched), then make the change",
		strings.Join(names, ", "), map[bool]string{true: "this node", false: "these nodes"}[len(names) == 1], strings.Join(keys, " and "))
}

// gateKeys are the keys of a healthGate.vm value ("cores=2 diskStorage=a").
func gateKeys(vm string) []string {
	var out []string
	for _, kv := range strings.Fields(vm) {
		k, _, _ := strings.Cut(kv, "=")
		out = append(out, k)
	}
	return out
}
