package talos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/provider/backoff"
	"github.com/proxmoxtalos/proxmoxtalos/provider/internal/enginelog"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
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
// are rendered from, and the state recorded it before; or a refresh
// recorded drift of their objects in the cluster (driftPrefix).
func manifestInputsChanged(old, in ClusterHealthArgs) bool {
	return len(old.BootstrapManifests) > 0 && !equalStrings(old.BootstrapManifests, asRecorded(old.BootstrapManifests, in.BootstrapManifests))
}

// asRecorded is in as state written before inline manifest lines carried
// their objects' digest would record it (without them), when old is such
// state: a provider upgrade alone is no change.
func asRecorded(old, in []string) []string {
	for _, l := range old {
		if strings.Contains(l, talosconfig.InlineObjectsMark+"sha256:") {
			return in
		}
	}
	out := make([]string, 0, len(in))
	for _, l := range in {
		if i := strings.LastIndex(l, talosconfig.InlineObjectsMark+"sha256:"); i >= 0 && strings.HasPrefix(l, "inlineManifest ") {
			l = l[:i]
		}
		out = append(out, l)
	}
	return out
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
			enginelog.Logger(ctx).Info("bootstrap manifests: " + c.String())
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

// manifestRenderPoll reads the rendered manifests every second while waiting.
var manifestRenderPoll = backoff.Policy{Initial: time.Second}

// readRendered reads a control plane's bootstrap manifests once they are
// rendered from the inputs in (manifestsRendered), polling up to
// manifestRenderWait, or less when a URL it lacks keeps failing to
// download (fetchWatch).
func (r *ClusterHealth) readRendered(ctx context.Context, t talosapi.Target, o talosapi.Options, old, in ClusterHealthArgs) ([]map[string]any, error) {
	deadline := time.Now().Add(manifestRenderWait)
	fetch := newFetchWatch(t.Node, func(ctx context.Context) ([]talosapi.FetchFailures, error) {
		return talosapi.ManifestFetchFailures(ctx, t, o)
	}, time.Now)
	var objs []map[string]any
	err := backoff.Loop{Policy: manifestRenderPoll}.Run(ctx, func(ctx context.Context, _ int) (bool, error) {
		ms, err := talosapi.ReadRenderedManifests(ctx, t, o)
		if err != nil {
			return true, err
		}
		lag := manifestsRendered(ms, old.BootstrapManifests, in.BootstrapManifests)
		if l := proxyRendered(ms, deref(old.KubernetesVersion), deref(in.KubernetesVersion), ""); l != "" {
			// A patch may pin cluster.proxy.image at the old tag: the render
			// then follows the configuration and never changes.
			if pinned, err := talosapi.ConfiguredProxyImage(ctx, t, o); err == nil {
				l = proxyRendered(ms, deref(old.KubernetesVersion), deref(in.KubernetesVersion), pinned)
			}
			if l != "" {
				lag = strings.Join(slices.DeleteFunc([]string{lag, l}, func(s string) bool { return s == "" }), "; ")
			}
		}
		if lag == "" {
			for _, m := range ms {
				objs = append(objs, m.Objects...)
			}
			return true, nil
		}
		if time.Now().After(deadline) {
			return true, fmt.Errorf("control plane %s does not render the new manifests after %s (%s)", t.Node, manifestRenderWait, lag)
		}
		if err := fetch.check(ctx, missingURLs(ms, in.BootstrapManifests)); err != nil {
			return true, err
		}
		return false, nil
	})
	if _, ok := backoff.AsExhausted(err); ok {
		return nil, ctx.Err() // only the context ends this loop
	}
	if err != nil {
		return nil, err
	}
	return objs, nil
}

// manifestsRendered says what the manifests a control plane renders still
// lack of those the lines in name, or still hold of those dropped from
// old; "" when none. Talos names them "<priority>-<name>" (siderolabs/talos
// v1.13.9 internal/app/machined/pkg/controllers/k8s/control_plane.go
// ControlPlaneExtraManifestsController, extra_manifest.go): inline
// manifests "99-<name>", extraManifests URLs "99-<url>", the external cloud
// provider's manifests "30-<url>"; URLs are known here by their digests
// only (they may be secret). An inline manifest's objects must be those its
// line's digest says (an edit is waited for, not only a new name);
// a URL's contents are whatever the control plane fetched.
func manifestsRendered(ms []talosapi.RenderedManifest, old, in []string) string {
	byID := map[string]talosapi.RenderedManifest{}
	urls := map[string]string{} // priority + digest of the URL -> ID
	for _, m := range ms {
		byID[m.ID] = m
		if prio, rest, ok := strings.Cut(m.ID, "-"); ok {
			urls[prio+" "+talosconfig.InputDigest(rest)] = m.ID
		}
	}

	var missing, stale, left []string
	want := map[string]bool{}
	for _, l := range in {
		if name, objs, ok := inlineLine(l); ok {
			want["inline "+name] = true
			m, have := byID["99-"+name]
			switch {
			case !have:
				missing = append(missing, "99-"+name)
			case objs != "" && talosconfig.ObjectsDigest(m.Objects) != objs:
				stale = append(stale, "99-"+name)
			}
			continue
		}
		if prio, d, ok := urlLine(l); ok {
			want[prio+" "+d] = true
			if urls[prio+" "+d] == "" {
				missing = append(missing, urlWhat(prio)+" "+d)
			}
		}
	}
	for _, l := range old {
		if name, _, ok := inlineLine(l); ok && !want["inline "+name] && byID["99-"+name].ID != "" {
			left = append(left, "99-"+name)
		}
		if prio, d, ok := urlLine(l); ok && !want[prio+" "+d] && urls[prio+" "+d] != "" {
			left = append(left, urlWhat(prio)+" "+d)
		}
	}

	var parts []string
	if len(missing) > 0 {
		parts = append(parts, "missing "+strings.Join(missing, ", "))
	}
	if len(stale) > 0 {
		parts = append(parts, "still rendering the old contents of "+strings.Join(stale, ", "))
	}
	if len(left) > 0 {
		parts = append(parts, "still rendering "+strings.Join(left, ", "))
	}
	if len(missing) > 0 && slices.ContainsFunc(missing, func(s string) bool { return !strings.HasPrefix(s, "99-") }) {
		parts = append(parts, "Talos fetches URLs on the control plane and retries a failed download: "+
			"`talosctl -n <control plane> dmesg` shows ExtraManifestController's \"error downloading\" lines")
	}
	return strings.Join(parts, "; ")
}

// inlineLine reads a line "inlineManifest <name> sha256:...[ objects
// sha256:...]" of talosconfig.BootstrapManifestInputs: the name and the
// objects' digest ("" in state from before it).
func inlineLine(l string) (name, objects string, ok bool) {
	rest, ok := strings.CutPrefix(l, "inlineManifest ")
	if !ok {
		return "", "", false
	}
	if i := strings.LastIndex(rest, talosconfig.InlineObjectsMark+"sha256:"); i >= 0 {
		objects = rest[i+len(talosconfig.InlineObjectsMark):]
		rest = rest[:i]
	}
	if i := strings.LastIndex(rest, " sha256:"); i >= 0 {
		rest = rest[:i]
	}
	return rest, objects, true
}

// urlLine reads a URL's line: the priority Talos names its manifest with
// and the URL's digest.
func urlLine(l string) (prio, digest string, ok bool) {
	if d, ok := strings.CutPrefix(l, "extraManifest "); ok {
		return "99", d, true
	}
	if d, ok := strings.CutPrefix(l, "externalCloudProvider "); ok {
		return "30", d, true
	}
	return "", "", false
}

func urlWhat(prio string) string {
	if prio == "30" {
		return "externalCloudProvider.manifests URL"
	}
	return "extraManifests URL"
}

// proxyRendered says, in a Kubernetes upgrade from old to in, whether the
// control plane still renders kube-proxy's DaemonSet ("10-kube-proxy",
// siderolabs/talos v1.13.9 control_plane.go, k8stemplates kube-proxy.go)
// with the old version's image: the upgrade retags kube-proxy's image
// (talosconfig.RetagComponents), and the sync must apply the new one. ""
// when it renders another image, or no kube-proxy (disabled), or the image
// the control plane's configuration names (configured: a patch pinning
// cluster.proxy.image at the old tag, which no render will change).
func proxyRendered(ms []talosapi.RenderedManifest, old, in, configured string) string {
	old, in = "v"+strings.TrimPrefix(old, "v"), "v"+strings.TrimPrefix(in, "v")
	if old == "v" || in == "v" || old == in {
		return ""
	}
	for _, m := range ms {
		if m.ID != "10-kube-proxy" {
			continue
		}
		for _, o := range m.Objects {
			if o["kind"] != "DaemonSet" {
				continue
			}
			spec, _ := o["spec"].(map[string]any)
			tmpl, _ := spec["template"].(map[string]any)
			ps, _ := tmpl["spec"].(map[string]any)
			cs, _ := ps["containers"].([]any)
			for _, c := range cs {
				c, _ := c.(map[string]any)
				if img, _ := c["image"].(string); strings.HasSuffix(img, ":"+old) && img != configured {
					return "10-kube-proxy still renders " + img
				}
			}
		}
	}
	return ""
}
