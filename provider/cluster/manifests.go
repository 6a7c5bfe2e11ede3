package cluster

import (
	"fmt"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// manifestInputs are what the control planes render the bootstrap
// manifests from (talosconfig.BootstrapManifestInputs), read from the
// configuration the plan gives its first control plane (every control
// plane gets the same cluster section). The final health check syncs the
// manifests when they change, as `talosctl upgrade-k8s` would.
func manifestInputs(p *plan.Plan, cfgs map[string]string) ([]string, error) {
	name := firstControlPlane(p)
	if name == "" || cfgs[name] == "" {
		return nil, nil
	}
	cfg, err := configloader.NewFromBytes([]byte(cfgs[name]))
	if err != nil {
		return nil, fmt.Errorf("machine configuration of node %s: %w", name, err)
	}
	return talosconfig.BootstrapManifestInputs(cfg), nil
}

func firstControlPlane(p *plan.Plan) string {
	for _, name := range p.Rollout {
		for i := range p.Nodes {
			if p.Nodes[i].Name == name && p.Nodes[i].Role == plan.RoleControlPlane {
				return name
			}
		}
	}
	return ""
}

// manifestSyncNote says, for a preview, what the sync of the bootstrap
// manifests after the update creates, changes and prunes (the dry run of
// `talosctl upgrade-k8s`, siderolabs/talos v1.14.1
// pkg/cluster/kubernetes/talos_managed.go syncManifestsSSA), comparing the
// configuration a control plane runs with its new one: "" when it changes
// nothing, or when no control plane was read. A Kubernetes upgrade syncs
// too; what it moves is the new version's images, which the plan says.
func manifestSyncNote(p *plan.Plan, readings map[string]nodeReading, cfgs map[string]string) (string, error) {
	for i := range p.Nodes {
		n := &p.Nodes[i]
		r, ok := readings[n.Name]
		if !n.Existing || n.Role != plan.RoleControlPlane || !ok || r.err != nil || r.running.Config == "" || cfgs[n.Name] == "" {
			continue
		}
		running, err := configloader.NewFromBytes([]byte(r.running.Config))
		if err != nil {
			return "", nil //nolint:nilerr // what a node runs that does not load is reported by the summary
		}
		next, err := configloader.NewFromBytes([]byte(cfgs[n.Name]))
		if err != nil {
			return "", fmt.Errorf("machine configuration of node %s: %w", n.Name, err)
		}
		pv, err := talosconfig.PreviewManifestSync(running, next)
		if err != nil {
			return "", fmt.Errorf("inlineManifests: %w", err)
		}
		if pv.Empty() {
			return "", nil
		}
		return fmt.Sprintf("cluster %s: after the update, the bootstrap manifests are synced as talosctl upgrade-k8s does "+
			"(server-side apply; pruned objects only if the manifests' inventory lists them): %s", p.Cluster.Name, pv), nil
	}
	return "", nil
}
