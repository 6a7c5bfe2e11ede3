package talosapi

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
)

// HealthRequest describes the cluster a health wait expects.
type HealthRequest struct {
	// ControlPlanes and Workers are the nodes' addresses (as in Target.Node).
	ControlPlanes []string
	Workers       []string
	// Endpoints are the Talos API endpoints (default: each node itself).
	Endpoints []string
	// Creds are the cluster's Talos client credentials.
	Creds *Credentials
	// Kubeconfig is an admin kubeconfig; without it (and without
	// KubeconfigFrom) the Kubernetes checks are skipped.
	Kubeconfig []byte
	// KubeconfigFrom are control planes to ask for an admin kubeconfig
	// (the Kubeconfig API, as talosctl kubeconfig) when Kubeconfig is
	// empty: WaitHealthy takes it from the first that hands one out.
	KubeconfigFrom []string
	// KubernetesServer overrides the kubeconfig's server, e.g. the first
	// control plane's https://10.5.0.2:6443 before the VIP answers.
	KubernetesServer string
	// Others are the cluster's nodes this check does not require: nodes
	// later in a rollout, or removed by the update after the check (Pulumi
	// deletes removed resources last). They may or may not be etcd members
	// or Kubernetes nodes; neither is reported.
	Others []string
}

// Required services per role: the ones machined's MachineStatus readiness
// check waits for (internal/app/machined/pkg/controllers/runtime/
// machine_status.go getReadinessChecks), minus machined itself.
var (
	workerServices       = []string{"apid", "kubelet"}
	controlPlaneServices = []string{"apid", "kubelet", "etcd", "trustd"}
)

// checkServices says what is wrong with a node's service list, or "".
func checkServices(services []*machineapi.ServiceInfo, required []string) string {
	byID := map[string]*machineapi.ServiceInfo{}
	for _, s := range services {
		byID[s.GetId()] = s
	}

	var problems []string

	for _, id := range required {
		s, ok := byID[id]

		switch {
		case !ok:
			problems = append(problems, id+" not present")
		case s.GetState() != "Running":
			problems = append(problems, fmt.Sprintf("%s %s", id, s.GetState()))
		case !s.GetHealth().GetUnknown() && !s.GetHealth().GetHealthy():
			problems = append(problems, fmt.Sprintf("%s unhealthy (%s)", id, s.GetHealth().GetLastMessage()))
		}
	}

	return strings.Join(problems, ", ")
}

// checkEtcd compares an etcd member list with the expected control planes:
// every control plane a voting member, no learners, no members left behind
// by nodes that are gone (the scale-down problem).
func checkEtcd(members []*machineapi.EtcdMember, controlPlanes []string) string {
	want := map[string]bool{}
	for _, cp := range controlPlanes {
		want[hostOf(cp)] = true
	}

	seen := map[string]bool{}

	var problems []string

	for _, m := range members {
		hosts := peerHosts(m.GetPeerUrls())

		expected := false

		for _, h := range hosts {
			if want[h] {
				expected = true
				seen[h] = true
			}
		}

		switch {
		case !expected:
			problems = append(problems, fmt.Sprintf("member %s (%s) is not an expected control plane", m.GetHostname(), strings.Join(m.GetPeerUrls(), ",")))
		case m.GetIsLearner():
			problems = append(problems, fmt.Sprintf("member %s is still a learner", m.GetHostname()))
		}
	}

	var missing []string

	for h := range want {
		if !seen[h] {
			missing = append(missing, h)
		}
	}

	sort.Strings(missing)

	if len(missing) > 0 {
		problems = append(problems, "control planes not members yet: "+strings.Join(missing, ", "))
	}

	return strings.Join(problems, "; ")
}

// checkNodes says which expected nodes are missing or not Ready in the
// Kubernetes node list; nodes are matched by address. kubeletSince are the
// times the nodes' kubelets started (by address, from Talos's service
// events): a Ready condition its kubelet last posted before then is the
// previous run's, which the API still holds when the cluster was without
// etcd quorum or the node came back before the node lifecycle controller
// marked it Unknown (its grace period is 40 s or more). Only the current
// kubelet's word counts: after a boot it reports NotReady until the CNI
// has set up the node's network.
func checkNodes(nodes []kubeNode, expected []string, kubeletSince map[string]time.Time) string {
	byAddr := map[string]kubeNode{}

	for _, n := range nodes {
		for _, a := range n.Addresses {
			byAddr[a] = n
		}
	}

	var problems []string

	for _, e := range expected {
		h := hostOf(e)

		n, ok := byAddr[h]

		switch {
		case !ok:
			problems = append(problems, h+" not registered")
		case !n.Ready:
			problems = append(problems, fmt.Sprintf("%s (%s) not Ready", n.Name, h))
		case postedBefore(n.ReadyPosted, kubeletSince[h]):
			problems = append(problems, fmt.Sprintf("%s (%s) Ready only as its previous kubelet reported it (at %s; the kubelet runs since %s)",
				n.Name, h, n.ReadyPosted.UTC().Format(time.TimeOnly), kubeletSince[h].UTC().Format(time.TimeOnly)))
		}
	}

	return strings.Join(problems, ", ")
}

// postedBefore: a status posted at posted (the kubelet's clock) is older
// than a kubelet started at since (machined's clock on the same node).
// lastHeartbeatTime has whole seconds (metav1.Time), so both are compared
// as whole seconds: a status posted in the second the kubelet started may
// be its own. Either unknown: not older, as nothing says so.
func postedBefore(posted, since time.Time) bool {
	return !posted.IsZero() && !since.IsZero() && posted.Truncate(time.Second).Before(since.Truncate(time.Second))
}

// runningSince is when a service's current run started: the first of its
// latest events that are all Running (the start, then health changes).
// Zero — nothing to compare with — when it does not run, or when the
// events do not show the run's start for certain: Talos keeps the latest
// 64 events of a service (events.MaxEventsToKeep,
// internal/app/machined/pkg/system/events/events.go) and a kubelet whose
// health check flaps adds a Running event each time, so the start may have
// been dropped, and the oldest kept Running event would be later than the
// start; a kubelet posts an unchanged status only every 5 minutes
// (nodeStatusReportFrequency), and its Ready would be taken for the
// previous run's that long. The start is certain only when the event
// before the Running streak (Starting, Preparing, Waiting, ...) is kept.
func runningSince(s *machineapi.ServiceInfo) time.Time {
	if s.GetState() != "Running" {
		return time.Time{}
	}

	events := s.GetEvents().GetEvents()

	i := len(events) - 1
	for i >= 0 && events[i].GetState() == "Running" {
		i--
	}

	// i < 0: all kept events are Running (or none are kept), the start
	// may have been dropped; i == len-1: the state says Running but the
	// last event does not.
	if i < 0 || i == len(events)-1 {
		return time.Time{}
	}

	ts := events[i+1].GetTs()
	if ts == nil {
		return time.Time{}
	}

	return ts.AsTime()
}

// withoutMembers drops the members on the given nodes.
func withoutMembers(members []*machineapi.EtcdMember, nodes []string) []*machineapi.EtcdMember {
	drop := map[string]bool{}
	for _, n := range nodes {
		drop[hostOf(n)] = true
	}

	var out []*machineapi.EtcdMember

	for _, m := range members {
		if !slices.ContainsFunc(peerHosts(m.GetPeerUrls()), func(h string) bool { return drop[h] }) {
			out = append(out, m)
		}
	}

	return out
}

// SameHost compares node addresses with or without a port.
func SameHost(a, b string) bool { return hostOf(a) == hostOf(b) }

// hostOf is an address without its port.
func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}

	return strings.Trim(addr, "[]")
}

func peerHosts(urls []string) []string {
	var out []string

	for _, u := range urls {
		if p, err := url.Parse(u); err == nil && p.Hostname() != "" {
			out = append(out, p.Hostname())
		}
	}

	return out
}

// HealthReport is the outcome of the last health check.
type HealthReport struct {
	// Problems lists what is not healthy yet, check by check; empty when
	// healthy.
	Problems []string
	// Nodes are the Kubernetes nodes seen, by name, with their providerID.
	Nodes map[string]string
	// Down is set when a required node's machine is known to be off
	// (Options.Machines): the cluster cannot become healthy without it.
	Down *MachineDownError
}

// CheckHealth runs every check once.
func CheckHealth(ctx context.Context, req HealthRequest, o Options) *HealthReport {
	o = o.withDefaults()
	rep := &HealthReport{Nodes: map[string]string{}}

	var nodes []healthNode
	for _, cp := range req.ControlPlanes {
		nodes = append(nodes, healthNode{addr: cp, required: controlPlaneServices, controlPlane: true})
	}

	for _, w := range req.Workers {
		nodes = append(nodes, healthNode{addr: w, required: workerServices})
	}

	etcdSeen := map[string]bool{}
	kubeletSince := map[string]time.Time{}

	// merged in node order, so a report reads the same however the
	// answers came in
	for i, c := range checkTalosNodes(ctx, o, req, nodes) {
		if c.down != nil && rep.Down == nil {
			rep.Down = c.down
		}

		rep.Problems = append(rep.Problems, c.problems...)

		if c.kubelet {
			kubeletSince[hostOf(nodes[i].addr)] = c.kubeletSince
		}

		// Every control plane's view is checked; the same problem seen by
		// several is reported once.
		if c.etcd != "" && !etcdSeen[c.etcd] {
			etcdSeen[c.etcd] = true
			rep.Problems = append(rep.Problems, fmt.Sprintf("etcd as seen by %s: %s", nodes[i].addr, c.etcd))
		}
	}

	if len(req.Kubeconfig) > 0 {
		rep.Problems = append(rep.Problems, checkKubernetes(ctx, o, req, rep, kubeletSince)...)
	}

	return rep
}

func checkKubernetes(ctx context.Context, o Options, req HealthRequest, rep *HealthReport, kubeletSince map[string]time.Time) []string {
	info, err := ParseKubeconfig(req.Kubeconfig)
	if err != nil {
		return []string{"kubeconfig: " + err.Error()}
	}

	server := req.KubernetesServer
	if server != "" {
		if server, err = KubernetesEndpoint(server); err != nil {
			return []string{err.Error()}
		}
	}

	k, err := newKubeAPI(info, server)
	if err != nil {
		return []string{err.Error()}
	}
	defer k.close()

	actx, cancel := o.attemptContext(ctx)
	defer cancel()

	if _, err := k.get(actx, "/readyz"); err != nil {
		return []string{fmt.Sprintf("Kubernetes API %s not ready: %s", k.server, err)}
	}

	body, err := k.get(actx, "/api/v1/nodes")
	if err != nil {
		return []string{fmt.Sprintf("Kubernetes API %s: %s", k.server, err)}
	}

	nodes, err := parseNodes(body)
	if err != nil {
		return []string{err.Error()}
	}

	for _, n := range nodes {
		rep.Nodes[n.Name] = n.ProviderID
	}

	if p := checkNodes(nodes, append(slices.Clone(req.ControlPlanes), req.Workers...), kubeletSince); p != "" {
		return []string{"Kubernetes nodes: " + p}
	}

	return nil
}

// shortErr keeps a health line readable.
func shortErr(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200] + "..."
	}

	return s
}

// WaitHealthy runs the health checks until all pass or ctx ends, reporting
// what is still missing.
func WaitHealthy(ctx context.Context, req HealthRequest, o Options) (*HealthReport, error) {
	o = o.withDefaults()

	if len(req.ControlPlanes) == 0 {
		return nil, fmt.Errorf("health check needs at least one control plane address")
	}

	var last *HealthReport

	err := o.poll(ctx, fmt.Sprintf("cluster health (%d control planes, %d workers)", len(req.ControlPlanes), len(req.Workers)), func(ctx context.Context) (bool, string, error) {
		if len(req.Kubeconfig) == 0 && len(req.KubeconfigFrom) > 0 {
			kc, problem, down := kubeconfigFromAny(ctx, o, req)
			if down != nil {
				// Every control plane asked is down; they are required.
				return false, problem, stop(down)
			}

			if kc == nil {
				return false, problem, nil
			}

			req.Kubeconfig = kc.Raw
		}

		last = CheckHealth(ctx, req, o)
		if len(last.Problems) == 0 {
			return true, "healthy", nil
		}

		if last.Down != nil {
			return false, strings.Join(last.Problems, "; "), stop(last.Down)
		}

		return false, strings.Join(last.Problems, "; "), nil
	})

	return last, err
}

// kubeconfigFromAny asks req.KubeconfigFrom in order for an admin
// kubeconfig; without one it says what each control plane answered, and
// down is the first one's *MachineDownError when every one's machine is
// off.
func kubeconfigFromAny(ctx context.Context, o Options, req HealthRequest) (kc *Kubeconfig, problem string, down *MachineDownError) {
	var answers []string

	downs := 0

	for _, cp := range req.KubeconfigFrom {
		kc, state, err := fetchKubeconfigOnce(ctx, o, Target{Node: cp, Endpoints: req.Endpoints, Creds: req.Creds}, "")
		if kc != nil {
			return kc, "", nil
		}

		if md, ok := asMachineDown(err); ok {
			downs++

			if down == nil {
				down = md
			}
		}

		switch {
		case err != nil:
			answers = append(answers, fmt.Sprintf("%s: %s", cp, shortErr(err)))
		case state != "":
			answers = append(answers, fmt.Sprintf("%s: %s", cp, state))
		}
	}

	problem = "no admin kubeconfig from the control planes yet (" + strings.Join(answers, "; ") + ")"
	if downs < len(req.KubeconfigFrom) {
		down = nil
	}

	return nil, problem, down
}
