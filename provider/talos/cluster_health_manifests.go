package talos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

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
func (r *ClusterHealth) syncManifests(ctx context.Context, old, in ClusterHealthArgs, creds *talosapi.Credentials) error {
	o := apiOptions(ctx, r.opts)

	var (
		objects []map[string]any
		tried   []string
	)
	for _, cp := range in.ControlPlanes {
		objs, err := r.readRendered(ctx, talosapi.Target{Node: cp, Endpoints: in.Endpoints, Creds: creds}, o, old, in)
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

// manifestRenderWait bounds how long a control plane may take to render a
// new configuration's manifests: Talos renders them asynchronously after
// the configuration is applied (ExtraManifestController), so a read right
// after may still see the old set.
const manifestRenderWait = 2 * time.Minute

// readRendered reads a control plane's bootstrap manifests once they are
// rendered from the inputs in (manifestsRendered), polling up to
// manifestRenderWait.
func (r *ClusterHealth) readRendered(ctx context.Context, t talosapi.Target, o talosapi.Options, old, in ClusterHealthArgs) ([]map[string]any, error) {
	deadline := time.Now().Add(manifestRenderWait)
	for {
		ids, objs, err := talosapi.ReadBootstrapManifestSet(ctx, t, o)
		if err != nil {
			return nil, err
		}
		lag := manifestsRendered(ids, old.BootstrapManifests, in.BootstrapManifests)
		if lag == "" {
			return objs, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("control plane %s does not render the new manifests after %s (%s)", t.Node, manifestRenderWait, lag)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// manifestsRendered says what the manifest IDs a control plane renders
// (ids) still lack of the inline manifests the lines in name ("99-<name>",
// siderolabs/talos v1.14.1 extra_manifest.go: "<priority>-<name>", priority
// 99 for inline manifests), or still hold of those dropped from old; ""
// when none.
func manifestsRendered(ids, old, in []string) string {
	have := map[string]bool{}
	for _, id := range ids {
		have[id] = true
	}
	want := map[string]bool{}
	var missing, left []string
	for _, name := range inlineNames(in) {
		want[name] = true
		if !have["99-"+name] {
			missing = append(missing, "99-"+name)
		}
	}
	for _, name := range inlineNames(old) {
		if !want[name] && have["99-"+name] {
			left = append(left, "99-"+name)
		}
	}
	var parts []string
	if len(missing) > 0 {
		parts = append(parts, "missing "+strings.Join(missing, ", "))
	}
	if len(left) > 0 {
		parts = append(parts, "still rendering "+strings.Join(left, ", "))
	}
	return strings.Join(parts, "; ")
}

// inlineNames are the inline manifests' names in the lines of
// talosconfig.BootstrapManifestInputs ("inlineManifest <name> sha256:...").
func inlineNames(lines []string) []string {
	var out []string
	for _, l := range lines {
		rest, ok := strings.CutPrefix(l, "inlineManifest ")
		if !ok {
			continue
		}
		if i := strings.LastIndex(rest, " sha256:"); i >= 0 {
			rest = rest[:i]
		}
		out = append(out, rest)
	}
	return out
}
