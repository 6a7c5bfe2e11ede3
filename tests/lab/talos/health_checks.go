package talos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/cosi-project/runtime/pkg/resource"
	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/cosi-project/runtime/pkg/state"
	"github.com/dustin/go-humanize"
	"github.com/hashicorp/go-multierror"
	"google.golang.org/grpc/codes"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/config/machine"
	"github.com/siderolabs/talos/pkg/machinery/constants"
	"github.com/siderolabs/talos/pkg/machinery/imager/quirks"
	"github.com/siderolabs/talos/pkg/machinery/resources/block"
	"github.com/siderolabs/talos/pkg/machinery/resources/config"
	"github.com/siderolabs/talos/pkg/machinery/resources/k8s"
	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"
)

// The server-side health checks: Talos's DefaultClusterChecks
// (pkg/cluster/check/default.go, ExtraClusterChecks is empty), in its order,
// with its descriptions, intervals, skip rules and error texts. Read from
// v1.14.1 (the talosctl the lab pins, .tools/talos-src); the check list is
// the one v1.12 machined runs. They are clients of the nodes' Talos API and of
// the Kubernetes API, never of the simulator's state, so they see what a
// real machined would see.

type healthCheck func(hc *healthCluster) *pollCondition

func poll(desc string, interval time.Duration, assert func(ctx context.Context, hc *healthCluster) error) healthCheck {
	return func(hc *healthCluster) *pollCondition {
		return &pollCondition{desc: desc, interval: interval, assert: func(ctx context.Context) error { return assert(ctx, hc) }}
	}
}

// skipIf is check.skipIf.
func skipIf(skip func(context.Context, *healthCluster) (bool, error), assert func(context.Context, *healthCluster) error) func(context.Context, *healthCluster) error {
	return func(ctx context.Context, hc *healthCluster) error {
		s, err := skip(ctx, hc)
		if err != nil {
			return err
		}

		if s {
			return errSkip
		}

		return assert(ctx, hc)
	}
}

var controlPlaneTypes = []machine.Type{machine.TypeInit, machine.TypeControlPlane}

func defaultClusterChecks() []healthCheck {
	return []healthCheck{
		// PreBootSequenceChecks
		poll("etcd to be healthy", 5*time.Second, skipIf(etcdDisabled, func(ctx context.Context, hc *healthCluster) error {
			return serviceHealth(ctx, hc, "etcd", hc.nodesByType(controlPlaneTypes...))
		})),
		poll("etcd members to be consistent across nodes", 5*time.Second, skipIf(etcdDisabled, etcdConsistent)),
		poll("etcd members to be control plane nodes", 5*time.Second, skipIf(etcdDisabled, etcdControlPlaneNodes)),
		poll("apid to be ready", 5*time.Second, apidReady),
		poll("all nodes memory sizes", 5*time.Second, memorySizes),
		poll("all nodes disk sizes", 5*time.Second, diskSizes),
		poll("no diagnostics", 5*time.Second, noDiagnostics),
		poll("kubelet to be healthy", 5*time.Second, skipIf(kubeletDisabled, func(ctx context.Context, hc *healthCluster) error {
			return serviceHealth(ctx, hc, "kubelet", hc.nodesByType(controlPlaneTypes...))
		})),
		poll("all nodes to finish boot sequence", 5*time.Second, allNodesBooted),
		// K8sComponentsReadinessChecks
		poll("all k8s nodes to report", 30*time.Second, k8sAllNodesReported),
		poll("all control plane static pods to be running", 5*time.Second, controlPlaneStaticPods),
		poll("all control plane components to be ready", 5*time.Second, fullControlPlane),
		// the rest of DefaultClusterChecks
		poll("all k8s nodes to report ready", 5*time.Second, skipIf(cniDisabled, k8sAllNodesReady)),
		poll("kube-proxy to report ready", 5*time.Second, kubeProxyReady),
		poll("coredns to report ready", 5*time.Second, skipIf(cniDisabled, corednsReady)),
		poll("all k8s nodes to report schedulable", 5*time.Second, k8sAllNodesSchedulable),
	}
}

func etcdDisabled(ctx context.Context, hc *healthCluster) (bool, error) {
	cfg, err := safe.ReaderGetByID[*config.MachineConfig](ctx, hc.cli.COSI, config.ActiveID)
	if err != nil {
		return false, err
	}

	cl := cfg.Config().Cluster()

	return cl == nil || cl.Etcd() == nil || cl.Etcd().CA() == nil, nil
}

func kubeletDisabled(ctx context.Context, hc *healthCluster) (bool, error) {
	_, err := safe.ReaderGetByID[*k8s.KubeletConfig](ctx, hc.cli.COSI, k8s.KubeletID)
	if state.IsNotFoundError(err) {
		return true, nil
	}

	return false, err
}

func cniDisabled(ctx context.Context, hc *healthCluster) (bool, error) {
	bmc, err := safe.ReaderGetByID[*k8s.BootstrapManifestsConfig](ctx, hc.cli.COSI, k8s.BootstrapManifestsConfigID)
	if err != nil {
		if state.IsNotFoundError(err) {
			return true, nil
		}

		return false, err
	}

	return bmc.TypedSpec().CNIName == constants.NoneCNI, nil
}

// serviceHealth is ServiceHealthAssertion (service.go).
func serviceHealth(ctx context.Context, hc *healthCluster, service string, nodes []healthNode) error {
	type info struct {
		client.ServiceInfo

		node string
	}

	var infos []info

	for _, ip := range internalIPs(nodes) {
		got, err := hc.cli.ServiceInfo(client.WithNode(ctx, ip), service)
		if err != nil {
			return fmt.Errorf("error getting service info for service %q from node %q: %w", service, ip, err)
		}

		for _, s := range got {
			infos = append(infos, info{ServiceInfo: s, node: ip})
		}
	}

	if len(infos) != len(nodes) {
		return fmt.Errorf("expected a response with %d node(s), got %d", len(nodes), len(infos))
	}

	slices.SortFunc(infos, func(a, b info) int { return cmp.Compare(a.node, b.node) })

	var errs *multierror.Error

	for _, s := range infos {
		events := s.Service.GetEvents().GetEvents()

		switch {
		case len(events) == 0:
			errs = multierror.Append(errs, fmt.Errorf("%s: no events recorded yet for service %q", s.node, service))
		case events[len(events)-1].GetState() != "Running":
			last := events[len(events)-1]
			errs = multierror.Append(errs, fmt.Errorf("%s: service %q not in expected state %q: current state [%s] %s", s.node, service, "Running", last.GetState(), last.GetMsg()))
		case !s.Service.GetHealth().GetHealthy():
			errs = multierror.Append(errs, fmt.Errorf("%s: service is not healthy: %s", s.node, service))
		}
	}

	return errs.ErrorOrNil()
}

// etcdConsistent is EtcdConsistentAssertion (etcd.go).
func etcdConsistent(ctx context.Context, hc *healthCluster) error {
	type key struct {
		hostname string
		id       uint64
		learner  bool
	}

	var known map[key]struct{}

	ips := internalIPs(hc.nodesByType(controlPlaneTypes...))
	slices.Sort(ips)

	for _, ip := range ips {
		resp, err := hc.cli.EtcdMemberList(client.WithNode(ctx, ip), &machineapi.EtcdMemberListRequest{})
		if err != nil {
			return fmt.Errorf("error getting etcd member list from node %q: %w", ip, err)
		}

		if len(resp.GetMessages()) == 0 {
			return fmt.Errorf("node %q: no messages returned", ip)
		}

		members := resp.GetMessages()[0].GetMembers()

		if known == nil {
			known = map[key]struct{}{}
			for _, m := range members {
				known[key{m.GetHostname(), m.GetId(), m.GetIsLearner()}] = struct{}{}
			}

			continue
		}

		if len(members) != len(known) {
			var expected, actual []string
			for k := range known {
				expected = append(expected, k.hostname)
			}

			for _, m := range members {
				actual = append(actual, m.GetHostname())
			}

			return fmt.Errorf("%s: expected to have %v members, got %v", ip, expected, actual)
		}

		for _, m := range members {
			if _, ok := known[key{m.GetHostname(), m.GetId(), m.GetIsLearner()}]; !ok {
				return fmt.Errorf("%s: found unexpected etcd member %s", ip, m.GetHostname())
			}
		}
	}

	return nil
}

// etcdControlPlaneNodes is EtcdControlPlaneNodesAssertion: the local
// member list's peer addresses are control plane addresses.
func etcdControlPlaneNodes(ctx context.Context, hc *healthCluster) error {
	resp, err := hc.cli.EtcdMemberList(ctx, &machineapi.EtcdMemberListRequest{})
	if err != nil {
		return err
	}

	cpIPs := map[string]bool{}

	var cpList []string

	for _, n := range hc.nodesByType(controlPlaneTypes...) {
		for _, ip := range n.ips {
			cpIPs[ip.String()] = true
			cpList = append(cpList, ip.String())
		}
	}

	var memberIPs []string

	subset := true

	for _, m := range resp.GetMessages()[0].GetMembers() {
		for _, peer := range m.GetPeerUrls() {
			u, err := url.Parse(peer)
			if err != nil {
				return err
			}

			memberIPs = append(memberIPs, u.Hostname())
			subset = subset && cpIPs[u.Hostname()]
		}
	}

	if !subset {
		return fmt.Errorf("etcd member ips %q are not subset of control plane node ips %q", memberIPs, cpList)
	}

	return nil
}

// apidReady is ApidReadyAssertion (apid.go).
func apidReady(ctx context.Context, hc *healthCluster) error {
	var errs error

	for _, ip := range internalIPs(hc.nodes) {
		if _, err := hc.cli.Version(client.WithNode(ctx, ip)); err != nil {
			errs = errors.Join(errs, fmt.Errorf("error getting version from node %q: %w", ip, err))
		}
	}

	return errs
}

// nonContainerNodes is getNonContainerNodes (nodes.go).
func nonContainerNodes(ctx context.Context, hc *healthCluster) ([]string, error) {
	var (
		out  []string
		errs error
	)

	for _, ip := range internalIPs(hc.nodes) {
		resp, err := hc.cli.Version(client.WithNode(ctx, ip))
		if err != nil {
			errs = errors.Join(errs, fmt.Errorf("error getting version from node %q: %w", ip, err))

			continue
		}

		if resp.GetMessages()[0].GetPlatform().GetMode() != "container" {
			out = append(out, ip)
		}
	}

	return out, errs
}

// minimalMemory is pkg/minimal.Memory's minimum (the kernel's 150 MiB off).
func minimalMemory(typ machine.Type) uint64 {
	if typ == machine.TypeWorker {
		return 1*humanize.GiByte - 150*humanize.MiByte
	}

	return 1848*humanize.MiByte - 150*humanize.MiByte
}

// memorySizes is AllNodesMemorySizes (nodes.go).
func memorySizes(ctx context.Context, hc *healthCluster) error {
	ips, err := nonContainerNodes(ctx, hc)
	if err != nil {
		return err
	}

	types := map[string]machine.Type{}
	for _, typ := range []machine.Type{machine.TypeInit, machine.TypeControlPlane, machine.TypeWorker} {
		for _, ip := range internalIPs(hc.byType[typ]) {
			types[ip] = typ
		}
	}

	var errs error

	for _, ip := range ips {
		resp, err := hc.cli.Memory(client.WithNode(ctx, ip))
		if err != nil {
			errs = multierror.Append(errs, fmt.Errorf("error getting memory info for node %q: %w", ip, err))

			continue
		}

		typ, ok := types[ip]
		if !ok {
			return fmt.Errorf("unexpected node %q in response", ip)
		}

		minimum := minimalMemory(typ)
		if total := resp.GetMessages()[0].GetMeminfo().GetMemtotal() * humanize.KiByte; total < minimum {
			errs = multierror.Append(errs, fmt.Errorf("node %q does not meet memory requirements: expected at least %d MiB, actual %d MiB",
				ip, minimum/humanize.MiByte, total/humanize.MiByte))
		}
	}

	return errs
}

// diskSizes is AllNodesDiskSizes (nodes.go): EPHEMERAL at least the minimal
// 6 GiB disk less the other partitions and 10 MiB of GPT overhead.
func diskSizes(ctx context.Context, hc *healthCluster) error {
	ips, err := nonContainerNodes(ctx, hc)
	if err != nil {
		return err
	}

	slices.Sort(ips)

	ps := quirks.New("").PartitionSizes()
	minimum := 6*humanize.GiByte - (ps.UKIEFISize() + ps.StateSize() + ps.METASize() + 10*1048576)

	var errs error

	for _, ip := range ips {
		vs, err := safe.StateGetByID[*block.VolumeStatus](client.WithNode(ctx, ip), hc.cli.COSI, constants.EphemeralPartitionLabel)
		if err != nil {
			if client.StatusCode(err) == codes.PermissionDenied {
				return errSkip
			}

			errs = multierror.Append(errs, fmt.Errorf("error getting volume status for node %q: %w", ip, err))

			continue
		}

		if size := vs.TypedSpec().Size; size < minimum {
			errs = multierror.Append(errs, fmt.Errorf("ephemeral partition %q for node %q is too small, expected at least %s, actual %s",
				vs.TypedSpec().Location, ip, humanize.IBytes(minimum), humanize.IBytes(size)))
		}
	}

	return errs
}

// noDiagnostics is NoDiagnostics (diagnostics.go).
func noDiagnostics(ctx context.Context, hc *healthCluster) error {
	ips := internalIPs(hc.nodes)
	warnings := map[string][]string{}

	for _, ip := range ips {
		list, err := safe.StateListAll[*runtime.Diagnostic](client.WithNode(ctx, ip), hc.cli.COSI)
		if err != nil {
			if client.StatusCode(err) == codes.PermissionDenied {
				return errSkip
			}

			return err
		}

		for d := range list.All() {
			warnings[ip] = append(warnings[ip], d.TypedSpec().Message)
		}
	}

	if len(warnings) == 0 {
		return nil
	}

	var parts []string

	for _, ip := range slices.Sorted(maps.Keys(warnings)) {
		parts = append(parts, ip+": "+strings.Join(warnings[ip], ", "))
	}

	return fmt.Errorf("active diagnostics: %s", strings.Join(parts, "; "))
}

// controlPlaneStaticPods is K8sControlPlaneStaticPods (kubernetes.go): each
// static pod whose config the node has must have a StaticPodStatus.
func controlPlaneStaticPods(ctx context.Context, hc *healthCluster) error {
	for _, n := range hc.nodesByType(controlPlaneTypes...) {
		nodeCtx := client.WithNode(ctx, n.internal.String())
		expected := map[string]struct{}{}

		for id, typ := range map[string]resource.Type{
			"kube-system/kube-apiserver":          k8s.APIServerConfigType,
			"kube-system/kube-controller-manager": k8s.ControllerManagerConfigType,
			"kube-system/kube-scheduler":          k8s.SchedulerConfigType,
		} {
			items, err := hc.cli.COSI.List(nodeCtx, resource.NewMetadata(k8s.ControlPlaneNamespaceName, typ, "", resource.VersionUndefined))
			if err != nil {
				return fmt.Errorf("error listing static pods config for node %s: %w", n.internal, err)
			}

			if len(items.Items) > 0 {
				expected[id] = struct{}{}
			}
		}

		items, err := safe.StateListAll[*k8s.StaticPodStatus](nodeCtx, hc.cli.COSI)
		if err != nil {
			return fmt.Errorf("error listing static pods on node %s: %w", n.internal, err)
		}

		for res := range items.All() {
			for id := range expected {
				if strings.HasPrefix(res.Metadata().ID(), id) {
					delete(expected, id)
				}
			}
		}

		if len(expected) > 0 {
			return fmt.Errorf("missing static pods on node %s: %v", n.internal, slices.Sorted(maps.Keys(expected)))
		}
	}

	return nil
}
