package talos

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/config/machine"

	"github.com/proxmoxtalos/proxmoxtalos/tests/kube"
)

// healthNode is cluster.NodeInfo.
type healthNode struct {
	internal netip.Addr
	ips      []netip.Addr
}

// healthCluster is what the server-side health checks see of the cluster
// (check.ClusterInfo): the nodes by type, a Talos client and, built on first
// use from the Talos API's kubeconfig, a Kubernetes client
// (cluster.KubernetesClient).
type healthCluster struct {
	cli           *client.Client
	forceEndpoint string

	nodes  []healthNode
	byType map[machine.Type][]healthNode

	kube *kubeClient
}

func (hc *healthCluster) add(typ machine.Type, n healthNode) {
	if hc.byType == nil {
		hc.byType = map[machine.Type][]healthNode{}
	}

	hc.nodes = append(hc.nodes, n)
	hc.byType[typ] = append(hc.byType[typ], n)
}

func (hc *healthCluster) nodesByType(types ...machine.Type) []healthNode {
	var out []healthNode
	for _, t := range types {
		out = append(out, hc.byType[t]...)
	}

	return out
}

func internalIPs(nodes []healthNode) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.internal.String())
	}

	return out
}

func (hc *healthCluster) close() {
	if hc.kube != nil {
		hc.kube.close()
	}
}

// k8s is cluster.KubernetesClient.K8sClient: the kubeconfig from the Talos
// API (Kubeconfig, os:admin only: a reader's health check fails here as on
// a real node), its server replaced by the request's k8s endpoint if any.
func (hc *healthCluster) k8s(ctx context.Context) (*kubeClient, error) {
	if hc.kube != nil {
		return hc.kube, nil
	}

	data, err := hc.cli.Kubeconfig(ctx)
	if err != nil {
		return nil, err
	}

	hclient, server, err := kube.Client(data)
	if err != nil {
		return nil, fmt.Errorf("error parsing kubeconfig from the Talos API: %w", err)
	}

	u, err := url.Parse(server)
	if err != nil {
		return nil, err
	}

	host := u.Host

	// K8sRestConfig: a forced endpoint without a port gets 6443.
	if hc.forceEndpoint != "" {
		fe, _ := strings.CutPrefix(hc.forceEndpoint, "https://")

		h, p, err := net.SplitHostPort(fe)
		if err != nil {
			h, p = fe, strconv.Itoa(6443)
		}

		host = net.JoinHostPort(h, p)
	}

	if tr, ok := hclient.Transport.(*http.Transport); ok {
		tr.TLSHandshakeTimeout = 5 * time.Second
	}

	hc.kube = &kubeClient{addr: func() string { return host }, http: hclient, ua: "talos-health-check"}

	return hc.kube, nil
}

// k8sSkip is each Kubernetes check's guard: without a kubeconfig
// (FailedPrecondition) the check is skipped.
func (hc *healthCluster) k8sOrSkip(ctx context.Context) (*kubeClient, error) {
	kc, err := hc.k8s(ctx)
	if err != nil && client.StatusCode(err) == codes.FailedPrecondition {
		return nil, errSkip
	}

	return kc, err
}

// kNode, kPod, kDaemonSet, kDeployment: the fields of the objects the
// checks read.
type kNode struct {
	Metadata struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Unschedulable bool `json:"unschedulable"`
	} `json:"spec"`
	Status struct {
		Addresses []struct {
			Type    string `json:"type"`
			Address string `json:"address"`
		} `json:"addresses"`
		Conditions []kCondition `json:"conditions"`
	} `json:"status"`
}

type kCondition struct {
	Type   string `json:"type"`
	Status string `json:"status"`
}

// info is the node's InternalIP and its internal and external addresses
// (k8sNodeToNodeInfo; unparsable addresses are left out).
func (n kNode) info() healthNode {
	var h healthNode

	for _, a := range n.Status.Addresses {
		ip, err := netip.ParseAddr(a.Address)
		if err != nil {
			continue
		}

		switch a.Type {
		case "InternalIP":
			h.internal = ip
			h.ips = append(h.ips, ip)
		case "ExternalIP":
			h.ips = append(h.ips, ip)
		}
	}

	return h
}

func (hc *healthCluster) k8sNodes(ctx context.Context) ([]kNode, error) {
	kc, err := hc.k8s(ctx)
	if err != nil {
		return nil, err
	}

	var list struct {
		Items []kNode `json:"items"`
	}

	return list.Items, kc.do(ctx, http.MethodGet, "/api/v1/nodes", "", nil, &list)
}

type kPod struct {
	Metadata struct {
		Name              string            `json:"name"`
		Annotations       map[string]string `json:"annotations"`
		DeletionTimestamp *string           `json:"deletionTimestamp"`
	} `json:"metadata"`
	Status struct {
		Phase             string       `json:"phase"`
		Conditions        []kCondition `json:"conditions"`
		ContainerStatuses []struct {
			State struct {
				Terminated any `json:"terminated"`
			} `json:"state"`
		} `json:"containerStatuses"`
	} `json:"status"`
}

func (p kPod) ready() bool {
	return slices.Contains(p.Status.Conditions, kCondition{Type: "Ready", Status: "True"})
}

// list GETs a list with a label selector into items.
func list[T any](ctx context.Context, kc *kubeClient, path, selector string) ([]T, error) {
	var l struct {
		Items []T `json:"items"`
	}

	if selector != "" {
		path += "?labelSelector=" + url.QueryEscape(selector)
	}

	return l.Items, kc.do(ctx, http.MethodGet, path, "", nil, &l)
}

type kDaemonSet struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Status struct {
		CurrentNumberScheduled int `json:"currentNumberScheduled"`
		DesiredNumberScheduled int `json:"desiredNumberScheduled"`
		NumberAvailable        int `json:"numberAvailable"`
		NumberReady            int `json:"numberReady"`
	} `json:"status"`
}

type kDeployment struct {
	Spec struct {
		Replicas *int `json:"replicas"`
	} `json:"spec"`
}
