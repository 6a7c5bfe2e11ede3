package talos

import (
	"cmp"
	"context"
	"net/netip"
	"slices"
	"strings"

	"github.com/cosi-project/runtime/pkg/state"

	"github.com/siderolabs/talos/pkg/machinery/config"
	mtype "github.com/siderolabs/talos/pkg/machinery/config/machine"
	clusterres "github.com/siderolabs/talos/pkg/machinery/resources/cluster"
	"github.com/siderolabs/talos/pkg/machinery/resources/k8s"
)

// memberInfo is one node as cluster discovery reports it.
type memberInfo struct {
	nodeID       string
	hostname     string
	addr         netip.Addr
	machineType  mtype.Type
	version      string
	apiServerPrt int // control planes: the API server port
}

// discoveryOn reports whether a config takes part in cluster discovery
// through the discovery service (cluster.discovery.enabled with the service
// registry, the default of generated configs). The lab stands in for the
// public discovery service: nodes of one cluster ID that use it see each other.
func discoveryOn(cfg config.Provider) bool {
	d := cfg.Cluster().Discovery()

	return d.Enabled() && d.Registries().Service().Enabled()
}

// discoveryMembers lists the running nodes that share n's cluster ID and
// discovery (sim.mu held). Nil when n does not take part: then Talos
// publishes no Member at all (cluster/member.go only merges affiliates when
// discovery is enabled).
func (s *Sim) discoveryMembers(n *Node) []memberInfo {
	if n.active == nil || !discoveryOn(n.active) {
		return nil
	}

	id := n.active.Cluster().ID()

	var out []memberInfo

	for x := range s.nodes {
		if x.phase != PhaseRunning || x.active == nil || x.ps == nil || !x.addr.IsValid() || x.hostname == "" ||
			x.active.Cluster().ID() != id || !discoveryOn(x.active) {
			continue
		}

		m := memberInfo{
			nodeID:      x.ps.nodeID,
			hostname:    x.hostname,
			addr:        x.addr,
			machineType: x.active.Machine().Type(),
			version:     x.image.Version,
		}

		if isControlPlane(x.active) {
			m.apiServerPrt = x.active.Cluster().LocalAPIServerPort()
		}

		out = append(out, m)
	}

	slices.SortFunc(out, func(a, b memberInfo) int { return cmp.Compare(a.hostname, b.hostname) })

	return out
}

// publishMembers: one Member per discovered node, named by its nodename
// (cluster/member.go), OS "Talos (<version>)" as the affiliate reports it.
func publishMembers(ctx context.Context, st state.State, snap resourceSnapshot) error {
	var members []*clusterres.Member

	for _, m := range snap.members {
		r := clusterres.NewMember(clusterres.NamespaceName, strings.ToLower(m.hostname))
		spec := r.TypedSpec()
		spec.NodeID = m.nodeID
		spec.Hostname = m.hostname
		spec.Addresses = []netip.Addr{m.addr}
		spec.MachineType = m.machineType
		spec.OperatingSystem = "Talos (" + m.version + ")"

		if m.apiServerPrt != 0 {
			spec.ControlPlane = &clusterres.ControlPlane{APIServerPort: m.apiServerPrt}
		}

		members = append(members, r)
	}

	return replaceAll(ctx, st, clusterres.NewMember(clusterres.NamespaceName, "").Metadata(), members)
}

// publishStaticPods: a control plane renders kube-apiserver,
// kube-controller-manager and kube-scheduler as static pods for its kubelet
// (k8s/control_plane_static_pod.go); the spec is the pod, abridged to what
// identifies it (name, namespace, labels, image, command).
func publishStaticPods(ctx context.Context, st state.State, snap resourceSnapshot) error {
	var pods []*k8s.StaticPod

	if snap.active != nil && isControlPlane(snap.active) {
		c := snap.active.Cluster()

		for _, p := range []struct {
			name, image string
		}{
			{"kube-apiserver", c.APIServer().Image()},
			{"kube-controller-manager", c.ControllerManager().Image()},
			{"kube-scheduler", c.Scheduler().Image()},
		} {
			r := k8s.NewStaticPod(k8s.NamespaceName, p.name)
			r.TypedSpec().Pod = map[string]any{
				"apiVersion": "v1",
				"kind":       "Pod",
				"metadata": map[string]any{
					"name":      p.name,
					"namespace": "kube-system",
					"labels": map[string]any{
						"k8s-app": p.name,
						"tier":    "control-plane",
					},
				},
				"spec": map[string]any{
					"containers": []any{map[string]any{
						"name":    p.name,
						"image":   p.image,
						"command": []any{"/usr/local/bin/" + p.name},
					}},
					"hostNetwork":       true,
					"priorityClassName": "system-cluster-critical",
				},
			}
			pods = append(pods, r)
		}
	}

	return replaceAll(ctx, st, k8s.NewStaticPod(k8s.NamespaceName, "").Metadata(), pods)
}
