package talos

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/cosi-project/runtime/pkg/state"

	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"
)

// allNodesBooted is AllNodesBootedAssertion (events.go): a watch of each
// node's MachineStatus until every node reported a stage; all running, or an
// error naming the stages.
func allNodesBooted(ctx context.Context, hc *healthCluster) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	type nodeEvent struct {
		node string
		ev   state.Event
	}

	events := make(chan nodeEvent)
	ips := internalIPs(hc.nodes)
	stages := map[string]runtime.MachineStage{}

	for _, ip := range ips {
		stages[ip] = runtime.MachineStageUnknown
		ch := make(chan state.Event)

		if err := hc.cli.COSI.Watch(client.WithNode(ctx, ip), runtime.NewMachineStatus().Metadata(), ch); err != nil {
			return err
		}

		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case ev := <-ch:
					select {
					case events <- nodeEvent{node: ip, ev: ev}:
					case <-ctx.Done():
						return
					}
				}
			}
		}()
	}

	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e := <-events:
			switch e.ev.Type {
			case state.Created, state.Updated:
				ms, ok := e.ev.Resource.(*runtime.MachineStatus)
				if !ok {
					return fmt.Errorf("unexpected resource type: %T", e.ev.Resource)
				}

				stages[e.node] = ms.TypedSpec().Stage
			case state.Errored:
				return fmt.Errorf("error watching machine %s status: %w", e.node, e.ev.Error)
			case state.Destroyed, state.Bootstrapped, state.Noop:
			}
		}

		byStage := map[runtime.MachineStage][]string{}
		reported, running := true, true

		for ip, st := range stages {
			reported = reported && st != runtime.MachineStageUnknown
			running = running && st == runtime.MachineStageRunning
			byStage[st] = append(byStage[st], ip)
		}

		if !reported {
			continue
		}

		if running {
			return nil
		}

		delete(byStage, runtime.MachineStageRunning)

		var parts []string

		for _, st := range slices.Sorted(maps.Keys(byStage)) {
			slices.Sort(byStage[st])
			parts = append(parts, fmt.Sprintf("%s: %v", st, byStage[st]))
		}

		return fmt.Errorf("nodes are not running: %s", strings.Join(parts, ", "))
	}
}

// nodesMatch is cluster.NodesMatch: each expected node shares an address
// with one actual node, and no actual node is left over.
func nodesMatch(expected, actual []healthNode) error {
	left := slices.Clone(actual)

	for _, e := range expected {
		i := slices.IndexFunc(left, func(a healthNode) bool {
			return slices.ContainsFunc(a.ips, func(ip netip.Addr) bool { return slices.Contains(e.ips, ip) })
		})
		if i < 0 {
			return fmt.Errorf("can't find expected node with IPs %q", e.ips)
		}

		left = slices.Delete(left, i, i+1)
	}

	if len(left) > 0 {
		var ips []netip.Addr
		for _, a := range left {
			ips = append(ips, a.ips...)
		}

		slices.SortFunc(ips, netip.Addr.Compare)

		return fmt.Errorf("unexpected nodes with IPs %q", ips)
	}

	return nil
}

// k8sAllNodesReported is K8sAllNodesReportedAssertion.
func k8sAllNodesReported(ctx context.Context, hc *healthCluster) error {
	if _, err := hc.k8sOrSkip(ctx); err != nil {
		return err
	}

	nodes, err := hc.k8sNodes(ctx)
	if err != nil {
		return err
	}

	actual := make([]healthNode, 0, len(nodes))
	for _, n := range nodes {
		actual = append(actual, n.info())
	}

	return nodesMatch(hc.nodes, actual)
}

// fullControlPlane is K8sFullControlPlaneAssertion: the control plane Nodes
// match, the (pre-0.9 self-hosted) control plane DaemonSets are complete,
// and each component has one Ready pod per control plane.
func fullControlPlane(ctx context.Context, hc *healthCluster) error {
	kc, err := hc.k8sOrSkip(ctx)
	if err != nil {
		return err
	}

	nodes, err := hc.k8sNodes(ctx)
	if err != nil {
		return err
	}

	var actual []healthNode

	for _, n := range nodes {
		if _, ok := n.Metadata.Labels["node-role.kubernetes.io/control-plane"]; ok {
			actual = append(actual, n.info())
		}
	}

	if err := nodesMatch(hc.nodesByType(controlPlaneTypes...), actual); err != nil {
		return err
	}

	dss, err := list[kDaemonSet](ctx, kc, "/apis/apps/v1/namespaces/kube-system/daemonsets", "k8s-app in (kube-apiserver,kube-scheduler,kube-controller-manager)")
	if err != nil {
		return err
	}

	for _, ds := range dss {
		st := ds.Status

		switch {
		case st.CurrentNumberScheduled != st.DesiredNumberScheduled:
			return fmt.Errorf("expected current number scheduled for %s to be %d, got %d", ds.Metadata.Name, st.DesiredNumberScheduled, st.CurrentNumberScheduled)
		case st.NumberAvailable != st.DesiredNumberScheduled:
			return fmt.Errorf("expected number available for %s to be %d, got %d", ds.Metadata.Name, st.DesiredNumberScheduled, st.NumberAvailable)
		case st.NumberReady != st.DesiredNumberScheduled:
			return fmt.Errorf("expected number ready for %s to be %d, got %d", ds.Metadata.Name, st.DesiredNumberScheduled, st.NumberReady)
		}
	}

	for _, app := range []string{"kube-apiserver", "kube-scheduler", "kube-controller-manager"} {
		pods, err := list[kPod](ctx, kc, "/api/v1/namespaces/kube-system/pods", "k8s-app = "+app)
		if err != nil {
			return fmt.Errorf("error listing pods for app %s: %w", app, err)
		}

		pods = slices.DeleteFunc(pods, func(p kPod) bool {
			_, checkpoint := p.Metadata.Annotations["checkpointer.alpha.coreos.com/checkpoint-of"]

			return checkpoint
		})

		if len(pods) != len(actual) {
			return fmt.Errorf("expected number of pods for %s to be %d, got %d", app, len(actual), len(pods))
		}

		var notReady []string

		for _, p := range pods {
			if i := slices.IndexFunc(p.Status.Conditions, func(c kCondition) bool { return c.Type == "Ready" }); i >= 0 && p.Status.Conditions[i].Status != "True" {
				notReady = append(notReady, p.Metadata.Name)
			}
		}

		if len(notReady) > 0 {
			return fmt.Errorf("some pods are not ready for %s: %v", app, notReady)
		}
	}

	return nil
}

// k8sAllNodesReady is K8sAllNodesReadyAssertion.
func k8sAllNodesReady(ctx context.Context, hc *healthCluster) error {
	if _, err := hc.k8sOrSkip(ctx); err != nil {
		return err
	}

	nodes, err := hc.k8sNodes(ctx)
	if err != nil {
		return err
	}

	var notReady []string

	for _, n := range nodes {
		for _, c := range n.Status.Conditions {
			if c.Type == "Ready" && c.Status != "True" {
				notReady = append(notReady, n.Metadata.Name)

				break
			}
		}
	}

	if len(notReady) == 0 {
		return nil
	}

	return fmt.Errorf("some nodes are not ready: %v", notReady)
}

// k8sAllNodesSchedulable is K8sAllNodesSchedulableAssertion (which names
// the first unschedulable node only).
func k8sAllNodesSchedulable(ctx context.Context, hc *healthCluster) error {
	if _, err := hc.k8sOrSkip(ctx); err != nil {
		return err
	}

	nodes, err := hc.k8sNodes(ctx)
	if err != nil {
		return err
	}

	for _, n := range nodes {
		if n.Spec.Unschedulable {
			return fmt.Errorf("some nodes are not schedulable: %v", []string{n.Metadata.Name})
		}
	}

	return nil
}

// kubeProxyReady: the kube-proxy DaemonSet's desired pods Ready; skipped
// without one.
func kubeProxyReady(ctx context.Context, hc *healthCluster) error {
	kc, err := hc.k8sOrSkip(ctx)
	if err != nil {
		return err
	}

	dss, err := list[kDaemonSet](ctx, kc, "/apis/apps/v1/namespaces/kube-system/daemonsets", "k8s-app=kube-proxy")
	if err != nil {
		return err
	}

	if len(dss) == 0 || dss[0].Status.DesiredNumberScheduled == 0 {
		return errSkip
	}

	return podsReady(ctx, kc, dss[0].Status.DesiredNumberScheduled, "kube-system", "k8s-app=kube-proxy")
}

// corednsReady: the kube-dns Deployment's replicas Ready; skipped without one.
func corednsReady(ctx context.Context, hc *healthCluster) error {
	kc, err := hc.k8sOrSkip(ctx)
	if err != nil {
		return err
	}

	deps, err := list[kDeployment](ctx, kc, "/apis/apps/v1/namespaces/kube-system/deployments", "k8s-app=kube-dns")
	if err != nil {
		return err
	}

	if len(deps) == 0 {
		return errSkip
	}

	replicas := 0
	if deps[0].Spec.Replicas != nil {
		replicas = *deps[0].Spec.Replicas
	}

	return podsReady(ctx, kc, replicas, "kube-system", "k8s-app=kube-dns")
}

// podsReady is K8sPodReadyAssertion: deleted, failed and completed pods do
// not count; every other pod Ready, and as many as replicas.
func podsReady(ctx context.Context, kc *kubeClient, replicas int, ns, selector string) error {
	pods, err := list[kPod](ctx, kc, "/api/v1/namespaces/"+ns+"/pods", selector)
	if err != nil {
		return err
	}

	if len(pods) == 0 {
		return fmt.Errorf("no pods found for namespace %q and label selector %q", ns, selector)
	}

	var ready, notReady []string

	for _, p := range pods {
		if p.Metadata.DeletionTimestamp != nil || p.Status.Phase == "Failed" {
			continue
		}

		terminated := true
		for _, c := range p.Status.ContainerStatuses {
			terminated = terminated && c.State.Terminated != nil
		}

		if terminated {
			continue
		}

		if p.ready() {
			ready = append(ready, p.Metadata.Name)
		} else {
			notReady = append(notReady, p.Metadata.Name)
		}
	}

	switch {
	case len(ready) == 0:
		return fmt.Errorf("no ready pods found for namespace %q and label selector %q", ns, selector)
	case len(notReady) > 0:
		return fmt.Errorf("some pods are not ready: %v", notReady)
	case len(ready) != replicas:
		return fmt.Errorf("expected %d ready pods, got %d", replicas, len(ready))
	}

	return nil
}
