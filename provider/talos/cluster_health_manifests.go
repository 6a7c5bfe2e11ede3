package talos

import (
	"context"
	"errors"
	"fmt"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
)

// manifestsDue says whether an update syncs the bootstrap manifests: the
// cluster's Kubernetes version is given and is not the one recorded at the
// last create or update. State written before the input existed records
// none: its next update syncs once, which is harmless (server-side apply of
// what the nodes render is idempotent, as `talosctl upgrade-k8s` to the
// same version is).
//
// A change of the bootstrap manifests' inputs (an inline manifest edited,
// an extraManifests URL added or removed) syncs too, without a version
// change: Talos only creates missing objects, so this is the only way a
// changed or removed manifest reaches the cluster (`talosctl upgrade-k8s
// --from X --to X` is what a talosctl user runs for it).
func manifestsDue(old, in ClusterHealthArgs) bool {
	if in.Kubeconfig == nil || *in.Kubeconfig == "" {
		return false
	}
	v := deref(in.KubernetesVersion)
	return v != "" && v != deref(old.KubernetesVersion) || manifestInputsChanged(old, in)
}

// manifestInputsChanged: the update changes what the bootstrap manifests
// are rendered from, and the state recorded it before.
func manifestInputsChanged(old, in ClusterHealthArgs) bool {
	return len(old.BootstrapManifests) > 0 && !equalStrings(old.BootstrapManifests, in.BootstrapManifests)
}

// syncManifests does what `talosctl upgrade-k8s` does once every node runs
// the new version (pkg/cluster/kubernetes/talos_managed.go: UpgradeTalosManaged
// ends with syncManifests): read the bootstrap manifests a control plane
// renders from its configuration and server-side apply them, pruning what
// they no longer hold. Errors name the control planes and objects, never the
// kubeconfig or certificates.
func (r *ClusterHealth) syncManifests(ctx context.Context, in ClusterHealthArgs, creds *talosapi.Credentials) error {
	o := apiOptions(ctx, r.opts)

	var (
		objects []map[string]any
		tried   []string
	)
	for _, cp := range in.ControlPlanes {
		objs, err := talosapi.ReadBootstrapManifests(ctx, talosapi.Target{Node: cp, Endpoints: in.Endpoints, Creds: creds}, o)
		if err == nil {
			objects = objs
			break
		}
		if ctx.Err() != nil {
			return err
		}
		tried = append(tried, err.Error())
	}
	if objects == nil && len(tried) > 0 {
		return fmt.Errorf("syncing the bootstrap manifests for Kubernetes %s: no control plane served them (%s); "+
			"the next update tries again", deref(in.KubernetesVersion), strings.Join(tried, "; "))
	}

	changes, err := talosapi.SyncManifestsVia(ctx, []byte(*in.Kubeconfig), deref(in.KubernetesEndpoint), objects)
	for _, c := range changes {
		if c.Action != "unchanged" {
			p.GetLogger(ctx).Info("bootstrap manifests: " + c.String())
		}
	}
	if err != nil {
		return errors.Join(fmt.Errorf("syncing the bootstrap manifests for Kubernetes %s (server-side apply, "+
			"field manager talos, as talosctl upgrade-k8s); the next update tries again", deref(in.KubernetesVersion)), err)
	}

	return nil
}
