package talos

import (
	"context"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosapi"
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
		p.GetLogger(ctx).Warningf("the bootstrap manifests could not be compared with the cluster, the state is kept: %s", err)

		return keep, nil
	}

	lines := withDrift(st.BootstrapManifests, drift)
	st.BootstrapManifests = lines
	in := req.Inputs
	in.BootstrapManifests = lines

	return infer.ReadResponse[ClusterHealthArgs, ClusterHealthState]{ID: req.ID, Inputs: in, State: st}, nil
}

// manifestDrift reads the manifests from the first control plane that
// serves them and compares them with the cluster. Each control plane gets
// its own readTimeout: one that is down must not use up the time of the
// others.
func (r *ClusterHealth) manifestDrift(ctx context.Context, a ClusterHealthArgs, creds *talosapi.Credentials) ([]talosapi.ManifestChange, error) {
	o := apiOptions(ctx, r.opts)

	var lastErr error
	for _, cp := range a.ControlPlanes {
		actx, cancel := context.WithTimeout(ctx, readTimeout)
		objs, err := talosapi.ReadBootstrapManifests(actx, talosapi.Target{Node: cp, Endpoints: a.Endpoints, Creds: creds}, o)
		cancel()
		if err != nil {
			lastErr = err

			continue
		}

		dctx, cancel := context.WithTimeout(ctx, readTimeout)
		defer cancel()

		return talosapi.ManifestDrift(dctx, []byte(*a.Kubeconfig), deref(a.KubernetesEndpoint), objs)
	}

	return nil, lastErr
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
