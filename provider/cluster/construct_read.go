package cluster

import (
	"context"
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/internals"

	"github.com/proxmoxtalos/proxmoxtalos/provider/config"
	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
)

// The reads Construct makes before it plans: where the cluster's VMs and
// hosts are read from, and what the nodes of an existing cluster run.

// inventoryFor is where Construct reads hosts, VMs and the nodes' running
// configurations: Proxmox and the nodes, or, in an offline preview, the
// stack's last state (offline is then that state; an update is refused).
func (c *Component) inventoryFor(ctx *pulumi.Context, name, clusterName string) (Inventory, configReader, *stackState, error) {
	newInventory := c.inventory
	if newInventory == nil {
		newInventory = proxmoxInventory
	}
	read := c.readConfig
	if read == nil {
		read = readRunningConfig
	}
	var offline *stackState
	if c.isOffline() {
		if !ctx.DryRun() {
			return nil, nil, nil, config.Refusal("update TalosCluster " + name)
		}
		resources, err := c.readState(ctx)
		if err != nil {
			return nil, nil, nil, err
		}
		if offline, err = newStackState(resources, clusterName); err != nil {
			return nil, nil, nil, err
		}
		newInventory = func(context.Context) (Inventory, error) { return offline, nil }
		read = offline.readConfig
	}
	inv, err := newInventory(ctx.Context())
	if err != nil {
		return nil, nil, nil, err
	}
	return inv, read, offline, nil
}

// readRunningCluster asks an existing cluster's nodes what they run, with
// the credentials of its secrets (registered here for that, under comp), and
// (unless offline) which nodes it had (knownNodes). notes are the warnings of
// what could not be known.
func (c *Component) readRunningCluster(ctx *pulumi.Context, name string, comp *TalosCluster, args *TalosClusterArgs,
	prev *plan.State, read configReader, offline bool) (
	secrets *machineSecrets, creds *talosapi.Credentials, readings map[string]nodeReading, known plan.Membership, notes []string, err error) {
	// The version only matters if the secrets are created now (it is
	// ignored for existing ones): the planned version is not known yet.
	contract := args.TalosVersion
	if contract == "" {
		contract = plan.DefaultTalosVersion
	}
	if secrets, err = registerSecrets(ctx, name, comp, contract); err != nil {
		return nil, nil, nil, known, nil, err
	}
	creds, why := awaitCredentials(ctx.Context(), secrets)
	if creds == nil {
		return secrets, nil, nil, c.knownNodes(ctx, prev, nil, nil, offline),
			[]string{fmt.Sprintf("%s: what the nodes run is not known; %s", why, unknownVersions)}, nil
	}
	if c.readConfig == nil && !offline {
		readings = readNodesThrough(ctx.Context(), prev, creds, readRunningConfig)
	} else {
		readings = readNodes(ctx.Context(), prev, creds, read)
	}
	notes = withRunningVersions(prev, readings)
	return secrets, creds, readings, c.knownNodes(ctx, prev, readings, creds, offline), notes, nil
}

// knownSecrets is the secrets bundle of an existing cluster ("" when it is
// not known yet, or unknown in this preview): known together with the
// client credentials (awaitCredentials), both outputs of one resource.
func knownSecrets(ctx context.Context, s *machineSecrets) string {
	if s == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	r, err := internals.UnsafeAwaitOutput(ctx, s.MachineSecrets)
	if err != nil || !r.Known {
		return ""
	}
	y, _ := r.Value.(string)
	return y
}

// bundleForChecks is the secrets bundle checkConfigs generates the
// configurations with: an existing cluster's own (known with its client
// credentials), so that the applies take what it generated; "" (a
// throwaway bundle) for a new cluster, and when the applies generate from
// another plan anyway (the one recomputed with the CCM token secret).
func bundleForChecks(ctx context.Context, creds *talosapi.Credentials, s *machineSecrets, tokenSecret pulumi.StringInput) string {
	if creds == nil || tokenSecret != nil {
		return ""
	}
	return knownSecrets(ctx, s)
}

// checkPlan is what Construct checks of a computed plan before it registers
// anything: the nodes' configurations, Kubernetes APIs the upgrade removes,
// inputs still unknown in an update, and the image's extensions. notes are
// the warnings the checks give.
func (c *Component) checkPlan(ctx *pulumi.Context, p *plan.Plan, prev *plan.State, readings map[string]nodeReading,
	creds *talosapi.Credentials, image *Image, secretsYAML string) (notes []string, gen *generated, err error) {
	if gen, err = checkConfigs(p, prev, secretsYAML); err != nil {
		return nil, nil, err
	}
	w, err := c.checkRemovedAPIs(ctx.Context(), p, prev, readings, creds)
	if err != nil {
		return nil, nil, err
	}
	if w != "" {
		notes = append(notes, w)
	}
	if err := refuseUnknown(p, ctx.DryRun()); err != nil {
		return nil, nil, err
	}
	if w, err = checkExtensions(ctx.Context(), c.extensions, p, prev, image); err != nil {
		return nil, nil, err
	}
	if w != "" {
		notes = append(notes, w)
	}
	return notes, gen, nil
}
