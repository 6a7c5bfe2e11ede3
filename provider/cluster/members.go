package cluster

import (
	"context"
	"fmt"
	"strings"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
)

// membersReader asks control planes which nodes the cluster knows, by
// name, with an address. Tests replace it.
type membersReader func(ctx context.Context, controlPlanes []string, creds *talosapi.Credentials) (map[string]string, error)

func readMembers(ctx context.Context, controlPlanes []string, creds *talosapi.Credentials) (map[string]string, error) {
	return talosapi.ReadMembers(ctx, controlPlanes, creds,
		talosapi.Options{AttemptTimeout: readTimeout / 2, DefaultTimeout: readTimeout}, readTimeout/2)
}

// members asks the control planes that answered before planning which
// nodes the cluster knows (Kubernetes Node objects, etcd members): a node
// the cluster knows whose VM is gone was deleted outside Pulumi and is
// created again at its address; a VM on an offline host gets its address
// from there. Read-only, within readTimeout; nil when no one says.
func (c *Component) members(ctx context.Context, prev *plan.State, readings map[string]nodeReading, creds *talosapi.Credentials) map[string]string {
	var cps []string
	for _, n := range prev.Nodes {
		if r, ok := readings[n.Name]; ok && r.err == nil && r.running.Config != "" && n.Role == plan.RoleControlPlane {
			cps = append(cps, n.Address)
		}
	}
	if len(cps) == 0 {
		return nil
	}
	read := c.readMembers
	if read == nil {
		read = readMembers
	}
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	m, err := read(ctx, cps, creds)
	if err != nil {
		return nil
	}
	return m
}

// refuseUnknown fails an update while nodes' VMs are on Proxmox nodes that
// are offline: what they are cannot be checked, so no plan for them can be
// trusted. A preview goes on with a warning per node (plan.PowerNotes).
func refuseUnknown(p *plan.Plan, dryRun bool) error {
	if dryRun {
		return nil
	}
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
