package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

type objectCounter func(ctx context.Context, controlPlane string, resources []string, creds *talosapi.Credentials) (map[string]int, error)

func countObjects(ctx context.Context, controlPlane string, resources []string, creds *talosapi.Credentials) (map[string]int, error) {
	return talosapi.CountObjects(ctx, talosapi.Target{Node: controlPlane, Creds: creds}, resources,
		talosapi.Options{AttemptTimeout: readTimeout / 2, DefaultTimeout: readTimeout})
}

// checkRemovedAPIs is upgrade-k8s's last pre-check, at preview: on a
// Kubernetes upgrade whose new minor stops serving API versions
// (talosconfig.RemovedAPIResources), objects still stored in them fail the
// preview, naming how many and where; their owners must move them to a
// served version first, or they are lost to the API after the upgrade.
// It asks the first control plane that answered; when none can be asked,
// a warning says what to check by hand.
func (c *Component) checkRemovedAPIs(ctx context.Context, p *plan.Plan, prev *plan.State, readings map[string]nodeReading, creds *talosapi.Credentials) (string, error) {
	if prev == nil {
		return "", nil
	}
	to, from, cp := p.Cluster.KubernetesVersion, "", ""
	for _, n := range prev.Nodes {
		if n.Role != plan.RoleControlPlane {
			continue
		}
		if from == "" {
			from = n.KubernetesVersion
		}
		if r, ok := readings[n.Name]; ok && r.err == nil && r.running.Config != "" && cp == "" {
			cp = n.Address
		}
	}
	if from == "" || from == to {
		return "", nil
	}
	resources := talosconfig.RemovedAPIResources(from, to)
	if len(resources) == 0 {
		return "", nil
	}
	unchecked := fmt.Sprintf("the Kubernetes upgrade %s → %s was not checked for objects of the API versions Kubernetes removes (%s)", from, to, strings.Join(resources, ", "))
	if c.isOffline() {
		// the nodes' state stands in for what they run, not for what the
		// cluster stores
		return unchecked + " (offline preview: the Kubernetes API is not asked); make sure none remain before the update", nil
	}
	if cp == "" || creds == nil {
		return unchecked + ": no control plane answered; make sure none remain before the update", nil
	}
	count := c.countObjects
	if count == nil {
		count = countObjects
	}
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	counts, err := count(ctx, cp, resources, creds)
	if err != nil {
		return fmt.Sprintf("%s: control plane %s: %v; make sure none remain before the update", unchecked, cp, err), nil
	}
	if len(counts) == 0 {
		return "", nil
	}
	var found []string
	for r, n := range counts {
		found = append(found, fmt.Sprintf("%d of %s", n, r))
	}
	sort.Strings(found)
	return "", fmt.Errorf("kubernetesVersion: Kubernetes %s no longer serves API versions the cluster still stores objects in (%s, counted through control plane %s): "+
		"migrate them to a served version first, as talosctl upgrade-k8s requires, then upgrade", to, strings.Join(found, ", "), cp)
}
