package talos

import (
	"errors"
	"slices"
)

// errEtcdDial: no control plane endpoint runs etcd; etcd's client gives up
// dialing after Talos's 5 s DialTimeout (internal/pkg/etcd/etcd.go NewClient).
var errEtcdDial = errors.New("error building etcd client: context deadline exceeded")

// errNoEndpoints: the cluster endpoint's host does not resolve.
var errNoEndpoints = errors.New("no controlplane endpoints discovered yet")

// endpointNodes lists the control planes a node reaches as "control plane
// endpoints" (sim.mu held). In Talos 1.12 these are the addresses the
// cluster endpoint's host resolves to (k8s StaticEndpointController), plus,
// once the Kubernetes API answers, the API servers' addresses (k8s
// EndpointController). The discovery service is not reachable from the lab.
// ok is false when the endpoint host does not resolve (a name the lab does
// not know).
func (s *Sim) endpointNodes(n *Node) (nodes []*Node, ok bool) {
	ap, ok := endpointAddrPort(n.active)
	if !ok {
		return nil, false
	}

	id := n.active.Cluster().ID()
	add := func(x *Node) {
		if x != nil && x.active != nil && isControlPlane(x.active) &&
			x.active.Cluster().ID() == id && !slices.Contains(nodes, x) {
			nodes = append(nodes, x)
		}
	}

	add(s.byAddr[ap.Addr()])

	c := s.clusters[id]
	if c == nil {
		return nodes, true
	}

	add(c.vipLeader[ap.Addr()])

	if s.apiReachable(c, n) || !n.apiReadyAt.IsZero() {
		for _, cp := range c.serving {
			add(cp)
		}
	}

	return nodes, true
}

// etcdClient finds the etcd cluster a client built from the control plane
// endpoints reaches, and whether it has a leader (Talos sets
// WithRequireLeader on its etcd calls). sim.mu held.
func (s *Sim) etcdClient(n *Node) (*etcdCluster, error) {
	nodes, ok := s.endpointNodes(n)
	if !ok {
		return nil, errNoEndpoints
	}

	for _, cp := range nodes {
		if cp.etcd != nil && cp.etcd.running {
			if !cp.etcdCluster.hasQuorum() {
				return nil, errEtcdNoLeader
			}

			return cp.etcdCluster, nil
		}
	}

	return nil, errEtcdDial
}

// trustdFor finds a control plane whose trustd signs a worker's apid
// certificate: reached through the endpoints, with the same machine token.
func (s *Sim) trustdFor(n *Node) *Node {
	nodes, _ := s.endpointNodes(n)

	for _, cp := range nodes {
		if cp.active.Machine().Security().Token() == n.active.Machine().Security().Token() {
			return cp
		}
	}

	return nil
}
