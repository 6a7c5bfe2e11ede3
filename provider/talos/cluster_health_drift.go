package talos

import (
	"context"
	"errors"
	"strings"

	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/proxmoxtalos/proxmoxtalos/provider/internal/enginelog"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// driftPrefix starts the bootstrapManifests lines a refresh records for
// objects of the bootstrap manifests that the cluster no longer holds as
// the manifests say ("drift: Deployment kube-system/coredns differs from
// the rendered manifests", "drift: ConfigMap kube-system/app is missing
// from the cluster", "drift: ServiceAccount kube-system/old is no longer in
// the rendered manifests (...)": an earlier sync applied it, the sync's
// inventory lists it, and the next sync prunes it). The program never gives such lines, so the next preview shows
// them going away as a change of bootstrapManifests, and the update syncs
// the manifests (manifestInputsChanged), as `talosctl upgrade-k8s` would
// bring the objects back.
const driftPrefix = "drift: "

// Read looks for drift of the bootstrap manifests' objects (`pulumi
// refresh`, `pulumi up --refresh`): Talos only creates missing objects at
// bootstrap, so an object edited or deleted later stays so until
// `talosctl upgrade-k8s` applies the manifests again. Read compares what a
// control plane renders with the cluster (a dry-run server-side apply,
// talosapi.ManifestDrift) and records what differs in bootstrapManifests.
// Without a kubeconfig or recorded manifests, or when neither a control
// plane nor the Kubernetes API answers, the state is kept (with a warning).
func (r *ClusterHealth) Read(ctx context.Context, req infer.ReadRequest[ClusterHealthArgs, ClusterHealthState]) (infer.ReadResponse[ClusterHealthArgs, ClusterHealthState], error) {
	st := req.State
	keep := infer.ReadResponse[ClusterHealthArgs, ClusterHealthState]{ID: req.ID, Inputs: req.Inputs, State: st}

	if st.Kubeconfig == nil || *st.Kubeconfig == "" || len(withoutDrift(st.BootstrapManifests)) == 0 {
		return keep, nil
	}

	creds, err := st.ClientConfiguration.credentials()
	if err != nil {
		return keep, err
	}

	drift, err := r.manifestDrift(ctx, st.ClusterHealthArgs, creds)
	if err != nil {
		enginelog.Logger(ctx).Warningf("the bootstrap manifests could not be compared with the cluster, the state is kept: %s", err)

		return keep, nil
	}

	lines := withDrift(st.BootstrapManifests, drift)
	st.BootstrapManifests = lines
	in := req.Inputs
	in.BootstrapManifests = lines

	return infer.ReadResponse[ClusterHealthArgs, ClusterHealthState]{ID: req.ID, Inputs: in, State: st}, nil
}

// manifestDrift compares the manifests a control plane renders with the
// cluster. The render must be complete (manifestsRendered with the
// recorded lines, as the sync's readRendered checks): a control plane still
// downloading a URL or re-rendering after a configuration change lacks
// objects the inventory lists, and those would read as "dropped". The
// first control plane with a complete render is used; when none has one,
// the first that answers is, without "dropped" lines (a warning says so).
// Each control plane gets its own readTimeout: one that is down must not
// use up the time of the others.
func (r *ClusterHealth) manifestDrift(ctx context.Context, a ClusterHealthArgs, creds *talosapi.Credentials) ([]talosapi.ManifestChange, error) {
	o := apiOptions(ctx, r.opts)

	objs, lag, err := pickRender(a.ControlPlanes, withoutDrift(a.BootstrapManifests), func(cp string) ([]talosapi.RenderedManifest, error) {
		actx, cancel := context.WithTimeout(ctx, readTimeout)
		defer cancel()
		return talosapi.ReadRenderedManifests(actx, talosapi.Target{Node: cp, Endpoints: a.Endpoints, Creds: creds}, o)
	})
	if err != nil {
		return nil, err
	}

	dctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	if lag != "" {
		enginelog.Logger(ctx).Warningf("no control plane renders all the bootstrap manifests (%s): objects the sync's "+
			"inventory lists and the render lacks are not reported as drift until one does", lag)

		return talosapi.ManifestDriftPartial(dctx, []byte(*a.Kubeconfig), deref(a.KubernetesEndpoint), objs)
	}

	return talosapi.ManifestDrift(dctx, []byte(*a.Kubeconfig), deref(a.KubernetesEndpoint), objs)
}

// pickRender reads the control planes' renders in turn and returns the
// objects of the first complete one (lag ""). When none is complete, it
// returns the first render read, without the objects of inline manifests
// whose contents are still the old ones (they would read as "changed"),
// and lag says what it lacks (the first control plane's). err is set only
// when no control plane answers.
func pickRender(cps, lines []string, read func(cp string) ([]talosapi.RenderedManifest, error)) (objs []map[string]any, lag string, err error) {
	var (
		first   []talosapi.RenderedManifest
		read1   bool
		lastErr error
	)
	for _, cp := range cps {
		ms, err := read(cp)
		if err != nil {
			lastErr = err

			continue
		}
		l := manifestsRendered(ms, nil, lines)
		if l == "" {
			for _, m := range ms {
				objs = append(objs, m.Objects...)
			}

			return objs, "", nil
		}
		if !read1 {
			first, lag, read1 = ms, "control plane "+cp+": "+l, true
		}
	}
	if !read1 {
		if lastErr == nil {
			lastErr = errors.New("the cluster lists no control planes")
		}

		return nil, "", lastErr
	}

	stale := staleInline(first, lines)
	for _, m := range first {
		if !stale[m.ID] {
			objs = append(objs, m.Objects...)
		}
	}

	return objs, lag, nil
}

// staleInline are the IDs of the inline manifests in ms whose objects are
// not those their line's digest says.
func staleInline(ms []talosapi.RenderedManifest, lines []string) map[string]bool {
	want := map[string]string{}
	for _, l := range lines {
		if name, objs, ok := inlineLine(l); ok && objs != "" {
			want["99-"+name] = objs
		}
	}
	out := map[string]bool{}
	for _, m := range ms {
		if d, ok := want[m.ID]; ok && talosconfig.ObjectsDigest(m.Objects) != d {
			out[m.ID] = true
		}
	}

	return out
}

// withDrift is lines without earlier drift lines, with one line per
// drifted object.
func withDrift(lines []string, drift []talosapi.ManifestChange) []string {
	out := withoutDrift(lines)
	for _, c := range drift {
		what := "differs from the rendered manifests"
		switch c.Action {
		case "deleted":
			what = "is missing from the cluster"
		case "dropped":
			what = "is no longer in the rendered manifests (the update deletes it, as talosctl upgrade-k8s does)"
		}
		out = append(out, driftPrefix+c.Subject+" "+what)
	}

	return out
}

func withoutDrift(lines []string) []string {
	var out []string
	for _, l := range lines {
		if !strings.HasPrefix(l, driftPrefix) {
			out = append(out, l)
		}
	}

	return out
}
