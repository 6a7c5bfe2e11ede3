package cluster

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
)

// membersReader asks control planes which nodes the cluster knows, by
// name, with an address. An answer that is not the whole membership (the
// etcd members without the Kubernetes Node objects) comes with an error.
// Tests replace it.
type membersReader func(ctx context.Context, controlPlanes []string, creds *talosapi.Credentials) (map[string]string, error)

func readMembers(ctx context.Context, controlPlanes []string, creds *talosapi.Credentials) (map[string]string, error) {
	return talosapi.ReadMembers(ctx, controlPlanes, creds,
		talosapi.Options{AttemptTimeout: readTimeout / 2, DefaultTimeout: readTimeout}, readTimeout/2)
}

// membersAttempts is how often the members are asked within readTimeout:
// a read that failed (an API server that hung on a paused etcd member
// moves on to the others) often succeeds when asked again.
const membersAttempts = 2

// membersRetryPause is the pause before asking again, so that a control
// plane that refused at once is not asked again at once.
const membersRetryPause = 500 * time.Millisecond

// knownNodes says which nodes of an existing cluster existed before this
// run apart from their VMs (plan.Membership): the cluster's own view and,
// when that cannot be read in full, the stack's state, so that a read
// that timed out never turns a node whose VM was deleted outside Pulumi
// into a new one. An offline preview asks neither (the stack's state is
// its inventory already).
func (c *Component) knownNodes(ctx *pulumi.Context, prev *plan.State, readings map[string]nodeReading, creds *talosapi.Credentials, offline bool) plan.Membership {
	if offline {
		return plan.Membership{}
	}
	var m plan.Membership
	m.Members, m.Unread = c.members(ctx.Context(), prev, readings, creds)
	if m.Unread != "" {
		m.Recorded, m.RecordedUnread = c.recordedNodes(ctx, prev.Cluster, creds)
	}
	return m
}

// addAnyway are the node names plan.EnvAddUnchecked lists (commas or
// spaces between them).
func (c *Component) addAnyway() []string {
	getenv := c.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	return strings.FieldsFunc(getenv(plan.EnvAddUnchecked), func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
}

// members asks the control planes that answered before planning which
// nodes the cluster knows (Kubernetes Node objects, etcd members): a node
// the cluster knows whose VM is gone was deleted outside Pulumi and is
// created again at its address; a VM on an offline host gets its address
// from there. Read-only, within readTimeout, asked again once when the
// first answer is not full. unread says why the answer is not full ("" when
// it is); what was learned comes with it.
func (c *Component) members(ctx context.Context, prev *plan.State, readings map[string]nodeReading, creds *talosapi.Credentials) (known map[string]string, unread string) {
	if creds == nil {
		return nil, "the cluster's client credentials are not available"
	}
	var cps, names []string
	for _, n := range prev.Nodes {
		if r, ok := readings[n.Name]; ok && r.err == nil && r.running.Config != "" && n.Role == plan.RoleControlPlane {
			cps, names = append(cps, n.Address), append(names, n.Name)
		}
	}
	if len(cps) == 0 {
		return nil, "no control plane answered"
	}
	read := c.readMembers
	if read == nil {
		read = readMembers
	}
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	var last error
	attempts := 0
	for attempts < membersAttempts && ctx.Err() == nil {
		if attempts > 0 {
			select {
			case <-ctx.Done():
				continue
			case <-time.After(membersRetryPause):
			}
		}
		attempts++
		m, err := read(ctx, cps, creds)
		if err == nil {
			return m, ""
		}
		if len(m) > len(known) {
			known = m
		}
		last = err
	}
	if last == nil {
		last = ctx.Err()
	}
	return known, fmt.Sprintf("%s %s asked %s within %s: %s", strings.Join(names, ", "), map[bool]string{true: "was", false: "were"}[len(names) == 1],
		times(attempts), readTimeout, firstLine(last.Error()))
}

// times says how often something was done ("once", "twice", "3 times").
func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}

// recordedNodes are the cluster's nodes the stack's last state holds, with
// their address, or why the state could not be read. A node is there by its
// VM or by its ConfigurationApply: a refresh (`pulumi refresh`, `up
// --refresh`) removes a VM deleted outside Pulumi from the state, since
// VirtualMachine's Read finds it gone, but keeps its node's apply, whose
// Read keeps the state of a node it cannot reach. An apply counts when it
// gave its node this cluster's client CA (creds; any when they are not
// known): another TalosCluster of the stack may name a node alike.
func (c *Component) recordedNodes(ctx *pulumi.Context, cluster string, creds *talosapi.Credentials) (map[string]string, string) {
	resources, err := c.readState(ctx)
	if err != nil {
		return nil, firstLine(err.Error())
	}
	st, err := collectStackState(resources, cluster, "to tell a VM deleted outside Pulumi from a new node")
	if err != nil {
		return nil, firstLine(err.Error())
	}
	out := map[string]string{}
	for _, vm := range st.vms {
		if a := primaryAddress(vm.NICs); a != "" && vm.Name != "" {
			out[vm.Name] = a
		}
	}
	for name, a := range st.applied {
		if out[name] == "" && (creds == nil || a.issuedBy(creds.CA)) {
			out[name] = a.address
		}
	}
	return out, ""
}

// refuseUnknown fails an update while nodes' VMs are on Proxmox nodes that
// are offline: what they are cannot be checked, so no plan for them can be
// trusted; and while planned nodes without a VM cannot be told from nodes
// whose VM was deleted outside Pulumi (plan.UncheckedRefusal). A preview
// goes on with a warning per node (plan.PowerNotes) or for the unchecked
// nodes.
func refuseUnknown(p *plan.Plan, dryRun bool) error {
	if dryRun {
		return nil
	}
	if err := refuseOffline(p); err != nil {
		return err
	}
	return p.UncheckedRefusal()
}

// refuseOffline is refuseUnknown's error for VMs on offline Proxmox nodes.
func refuseOffline(p *plan.Plan) error {
	byHost := map[string][]string{}
	var hosts []string
	for _, n := range p.Down() {
		if n.Power != plan.PowerUnknown {
			continue
		}
		if byHost[n.VM.Host] == nil {
			hosts = append(hosts, n.VM.Host)
		}
		byHost[n.VM.Host] = append(byHost[n.VM.Host], fmt.Sprintf("%s (VM %d)", n.Name, n.VM.VMID))
	}
	if len(hosts) == 0 {
		return nil
	}
	var parts []string
	for _, h := range hosts {
		parts = append(parts, fmt.Sprintf("Proxmox node %s is offline: %s cannot be checked", h, strings.Join(byHost[h], ", ")))
	}
	return fmt.Errorf("%s; nothing was changed. Bring the node back (VMs with onBoot start with it) and run pulumi up "+
		"again", strings.Join(parts, "; "))
}
