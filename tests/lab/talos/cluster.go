package talos

import (
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/config"
)

// cluster is what nodes sharing a cluster.id have in common: the etcd
// cluster the first bootstrap created, the Kubernetes objects, and which
// addresses serve the Kubernetes API.
type cluster struct {
	id        string
	etcd      *etcdCluster             // nil until bootstrapped
	kubeNodes map[string]*kubeNode     // by node name
	vipLeader map[netip.Addr]*Node     // VIP -> node holding it
	serving   map[netip.AddrPort]*Node // kube-apiserver listeners wanted: address -> CP node
	servers   map[netip.AddrPort]*kubeServer
	kube      *kubeControlPlane // the real kube-apiserver on the members (nil until first wanted)
	agent     *kubeAgent        // the simulated kubelets and controllers, clients of kube
	addons    clusterAddons     // what the control planes' manifests run
	// kubeMissingLogged, kubeVersionNote: said once in a node's log.
	kubeMissingLogged bool
	kubeVersionNote   string
}

func (s *Sim) clusterFor(id string) *cluster {
	c := s.clusters[id]
	if c == nil {
		c = &cluster{
			id:        id,
			kubeNodes: map[string]*kubeNode{},
			vipLeader: map[netip.Addr]*Node{},
			serving:   map[netip.AddrPort]*Node{},
			servers:   map[netip.AddrPort]*kubeServer{},
		}
		s.clusters[id] = c
	}

	return c
}

func (s *Sim) reconcileLoop() {
	defer s.wg.Done()

	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()

	ticks := 0

	for {
		select {
		case <-s.done:
			s.stopAllKube()

			return
		case <-s.kick:
		case <-tick.C:
			ticks++
		}

		changed := false

		for range 8 {
			if !s.reconcile() {
				break
			}

			changed = true
		}

		// Node resources (services, readiness) follow cluster state and time.
		if changed || ticks%5 == 0 {
			s.publishAll()
		}
	}
}

func (s *Sim) publishAll() {
	s.mu.Lock()
	nodes := make([]*Node, 0, len(s.nodes))

	for n := range s.nodes {
		if n.active != nil {
			nodes = append(nodes, n)
		}
	}
	s.mu.Unlock()

	for _, n := range nodes {
		n.publish()
	}
}

// reconcile moves cross-node state one step; it reports whether anything
// changed. I/O (listeners, disk writes) and node log lines (Node.logf takes
// sim.mu itself: called here it would deadlock the lab) run after the lock
// is released.
func (s *Sim) reconcile() bool {
	var (
		after   []func()
		changed bool
	)

	s.mu.Lock()

	now := time.Now()
	members := map[*cluster][]*Node{}

	for n := range s.nodes {
		if n.phase == PhaseRunning && n.active != nil && n.thaw == nil { // a paused node does nothing
			c := s.clusterFor(n.active.Cluster().ID())
			members[c] = append(members[c], n)
		}
	}

	for _, c := range s.clusters {
		nodes := members[c]
		slices.SortFunc(nodes, func(a, b *Node) int { return a.bootedAt.Compare(b.bootedAt) })

		s.reconcileEtcd(nodes, now, &after)
		changed = s.reconcileAPIServers(c, nodes, now, &after) || changed
		changed = s.reconcileVIPs(c, nodes, &after) || changed
		changed = s.reconcileWorkerCerts(c, nodes, &after) || changed
		changed = s.reconcileKubelets(c, nodes, now, &after) || changed
		changed = s.reconcileKubeListeners(c, &after) || changed

		s.checkSkew(c.id)
	}

	for _, ec := range s.etcds {
		s.checkQuorum(ec.cluster, ec)
	}

	s.mu.Unlock()

	for _, f := range after {
		f()
	}

	return changed
}

func isControlPlane(cfg config.Provider) bool {
	return cfg != nil && cfg.Machine().Type().IsControlPlane()
}

// reconcileEtcd starts etcd members of control planes that have etcd data,
// and joins control planes without data to the bootstrapped cluster once they
// can reach the Kubernetes API (Talos discovers the control plane endpoints
// through it). Both run outside sim.mu and nudge the reconciler when done.
func (s *Sim) reconcileEtcd(nodes []*Node, now time.Time, after *[]func()) {
	for _, n := range nodes {
		if !isControlPlane(n.active) || n.etcd != nil || n.etcdJoining || n.ps == nil {
			continue
		}

		if n.ps.etcdMember != 0 {
			ec := s.etcdByID(n.ps.etcdCluster)

			var m *etcdMember
			if ec != nil {
				m = ec.member(n.ps.etcdMember)
			}

			if m == nil {
				if !n.etcdFailedLogged {
					n.etcdFailedLogged = true
					*after = append(*after, func() {
						n.logf("etcd fails to start: this node's member was removed from the etcd cluster while it was down (reset the node to rejoin)")
					})
				}

				continue
			}

			// The member starts from its data (outside sim.mu).
			if now.After(n.etcdRetryAt) {
				n.etcdJoining = true
				gen, cfg, dir := n.gen, n.active, n.ps.etcdData

				if !s.goLocked(func() { n.startMemberAgain(gen, ec, m, cfg, dir) }) {
					n.etcdJoining = false
				}
			}

			continue
		}

		// Join through the control plane endpoints (the etcd service's
		// pre-start adds the member with a client from those endpoints),
		// each node a little apart (etcdStartSpread).
		if now.Before(n.bootedAt.Add(s.scaled(etcdFirstJoin(n.machine.Name)))) || !now.After(n.etcdRetryAt) {
			continue
		}

		// An attempt whose client reaches no member fails as any other
		// (Talos's addMember builds the client inside the attempt), and
		// waits for Talos's next one.
		ec, err := s.etcdClient(n)
		if err != nil {
			n.etcdRetryAt = s.nextJoinRetry()

			continue
		}

		// Talos's join against the members, outside sim.mu.
		n.etcdJoining = true
		gen, cfg := n.gen, n.active

		if !s.goLocked(func() { n.joinReal(gen, ec, cfg) }) {
			n.etcdJoining = false
		}
	}
}

func (s *Sim) etcdByID(id uint64) *etcdCluster {
	return s.etcds[id]
}

// reconcileAPIServers: a control plane's kube-apiserver static pod starts
// some time after its etcd member runs; it serves once the cluster's real
// apiserver (kubecp.go) is ready and its certificate names the node.
func (s *Sim) reconcileAPIServers(c *cluster, nodes []*Node, now time.Time, after *[]func()) bool {
	changed := false

	var pods []*Node

	for _, n := range nodes {
		if isControlPlane(n.active) && n.etcd != nil && n.etcd.running && n.addr.IsValid() &&
			!now.Before(n.etcdSince.Add(s.scaled(apiServerDuration))) {
			pods = append(pods, n)
		}
	}

	served := s.wantKube(c, pods, after)

	for _, n := range nodes {
		up := slices.Contains(pods, n) && served[n.addr]

		switch {
		case up && n.apiReadyAt.IsZero():
			n.apiReadyAt = now
			changed = true
		case !up && !n.apiReadyAt.IsZero():
			n.apiReadyAt = time.Time{}
			changed = true
		}
	}

	want := map[netip.AddrPort]*Node{}

	for _, n := range nodes {
		if !n.apiReadyAt.IsZero() && n.addr.IsValid() {
			want[netip.AddrPortFrom(n.addr, uint16(n.active.Cluster().LocalAPIServerPort()))] = n
		}
	}

	for vip, leader := range c.vipLeader {
		if leader != nil && !leader.apiReadyAt.IsZero() && served[vip] {
			want[netip.AddrPortFrom(vip, uint16(leader.active.Cluster().LocalAPIServerPort()))] = leader
		}
	}

	if !sameServing(c.serving, want) {
		c.serving = want
		changed = true
	}

	return changed
}

func sameServing(a, b map[netip.AddrPort]*Node) bool {
	if len(a) != len(b) {
		return false
	}

	for k, v := range a {
		if b[k] != v {
			return false
		}
	}

	return true
}

// apiReachable: the node's cluster endpoint (cluster.controlPlane.endpoint)
// lands on a kube-apiserver of this cluster. A name the lab cannot resolve or
// an address nobody serves is unreachable.
func (s *Sim) apiReachable(c *cluster, n *Node) bool {
	ap, ok := endpointAddrPort(n.active)
	if !ok {
		return false
	}

	return c.serving[ap] != nil
}

func endpointAddrPort(cfg config.Provider) (netip.AddrPort, bool) {
	u := cfg.Cluster().Endpoint()
	if u == nil {
		return netip.AddrPort{}, false
	}

	addr, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return netip.AddrPort{}, false
	}

	port := 443

	if p := u.Port(); p != "" {
		port, err = strconv.Atoi(p)
		if err != nil {
			return netip.AddrPort{}, false
		}
	}

	return netip.AddrPortFrom(addr, uint16(port)), true
}

// reconcileVIPs elects a holder for each shared VIP among control planes
// that configure it and whose etcd member is healthy (Talos elects the VIP
// holder through etcd, so a VIP only comes up after bootstrap). The holder
// keeps it while it stays eligible.
func (s *Sim) reconcileVIPs(c *cluster, nodes []*Node, after *[]func()) bool {
	changed := false
	eligible := map[netip.Addr][]*Node{}

	for _, n := range nodes {
		if n.etcd == nil || !n.etcd.running || n.etcdCluster == nil || !n.etcdCluster.hasQuorum() {
			continue
		}

		for _, vip := range configVIPs(n.active) {
			eligible[vip] = append(eligible[vip], n)
		}
	}

	for vip, holder := range c.vipLeader {
		if holder != nil && slices.Contains(eligible[vip], holder) {
			continue
		}

		delete(c.vipLeader, vip)

		changed = true

		if holder != nil {
			h := holder
			*after = append(*after, func() { h.dropVIP(vip) })
		}
	}

	for vip, cands := range eligible {
		if c.vipLeader[vip] != nil {
			continue
		}

		if !vip.Is4() || !netip.MustParsePrefix("127.0.0.0/8").Contains(vip) {
			continue
		}

		if other := s.byAddr[vip]; other != nil {
			continue // a VM uses this address: the VIP would conflict
		}

		leader := cands[0]
		c.vipLeader[vip] = leader
		changed = true

		*after = append(*after, func() { leader.takeVIP(vip) })
	}

	return changed
}

// configVIPs lists the shared VIPs a config asks for: Layer2VIPConfig
// documents and the deprecated machine.network.interfaces[].vip.
func configVIPs(cfg config.Provider) []netip.Addr {
	var out []netip.Addr

	for _, v := range cfg.NetworkVirtualIPConfigs() {
		out = append(out, v.VIP())
	}

	if cfg.Machine() != nil && cfg.Machine().Network() != nil {
		for _, dev := range cfg.Machine().Network().Devices() {
			if dev.VIPConfig() != nil {
				if a, err := netip.ParseAddr(dev.VIPConfig().IP()); err == nil {
					out = append(out, a)
				}
			}

			for _, vlan := range dev.Vlans() {
				if vlan.VIPConfig() != nil {
					if a, err := netip.ParseAddr(vlan.VIPConfig().IP()); err == nil {
						out = append(out, a)
					}
				}
			}
		}
	}

	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })

	return slices.Compact(out)
}

// reconcileWorkerCerts: a worker's apid needs a certificate from trustd on a
// control plane, which it finds through the control plane endpoints and
// authenticates to with machine.token (internal/app/machined/pkg/controllers/
// secrets/api.go). Until then the worker's Talos API does not listen: with a
// VIP as endpoint, that is until the cluster is bootstrapped.
func (s *Sim) reconcileWorkerCerts(c *cluster, nodes []*Node, after *[]func()) bool {
	changed := false

	for _, n := range nodes {
		if isControlPlane(n.active) || n.servers != nil && n.servers.apid != nil || n.certsPending || !n.addr.IsValid() {
			continue
		}

		trustd := s.trustdFor(n)
		if trustd == nil {
			continue
		}

		n.certsPending = true
		changed = true

		w, cpCfg := n, trustd.active

		*after = append(*after, func() {
			if err := w.startAPIWithIssuer(cpCfg); err != nil {
				w.logf("apid failed to start", "error", err)
			}

			w.sim.mu.Lock()
			w.certsPending = false
			w.sim.mu.Unlock()
		})
	}

	return changed
}

// reconcileKubeListeners starts and stops kube-apiserver listeners.
func (s *Sim) reconcileKubeListeners(c *cluster, after *[]func()) bool {
	changed := false

	for ap, srv := range c.servers {
		if c.serving[ap] == nil {
			delete(c.servers, ap)

			changed = true
			*after = append(*after, srv.stop)
		}
	}

	for ap := range c.serving {
		if c.servers[ap] != nil {
			continue
		}

		srv := &kubeServer{sim: s, cluster: c, addr: ap}
		c.servers[ap] = srv
		changed = true

		*after = append(*after, srv.start)
	}

	return changed
}

func (s *Sim) stopAllKube() {
	s.mu.Lock()

	var servers []*kubeServer

	for _, c := range s.clusters {
		for ap, srv := range c.servers {
			servers = append(servers, srv)
			delete(c.servers, ap)
		}
	}
	s.mu.Unlock()

	for _, srv := range servers {
		srv.stop()
	}
}

// vipHolder returns the node holding a VIP, or nil.
func (s *Sim) vipHolder(vip netip.Addr) *Node {
	s.mu.Lock()
	defer s.mu.Unlock()

	for _, c := range s.clusters {
		if n := c.vipLeader[vip]; n != nil {
			return n
		}
	}

	return nil
}
