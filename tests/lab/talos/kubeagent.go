package talos

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// kubeAgent plays the Kubernetes clients of one cluster against its real
// apiserver: each node's kubelet (registration, status, lease, mirror pods
// of the static control plane pods, serving certificate requests) with the
// node's own identity (system:node:<name>, so the Node authorizer and
// NodeRestriction judge it), and, as system:masters, Talos's node
// controller (labels, taints, cordon), kube-controller-manager's node
// lifecycle, pod CIDR allocation and CSR signing, the cloud controller
// manager (providerID) and the kubelet serving cert approver. What the API
// then holds (a node's Ready condition, whether it still exists) flows back
// into the simulation, as Talos reads it.
type kubeAgent struct {
	sim  *Sim
	c    *cluster
	kcp  *kubeControlPlane
	kick chan struct{}
	done chan struct{}
	wg   sync.WaitGroup

	// Owned by the agent's goroutine.
	pki      *kubePKI
	admin    *kubeClient
	kubelets map[string]*kubeClient
	posted   map[string]postedStatus
	leases   map[string]time.Time
	csrs     map[string]time.Time // node -> boot whose serving CSR was created
	rbacDone bool
	logged   map[string]bool
	// manifestsDone: every bootstrap manifest object exists (for this pki).
	manifestsDone bool
	// extraDone: the inline manifests' objects last handled completely
	// (extraKey), "" before.
	extraDone string
	// lastDigest and lastFull: what the last full round saw and when; a
	// nudge with nothing new waits for the resync (fullResync).
	lastDigest string
	lastFull   time.Time
	// kubeletAPIs: each live kubelet's API server (kubeletapi.go).
	kubeletAPIs map[string]*kubeletAPI
	// writes counts the round's changing requests; burst the rounds in a
	// row that changed something (each one's effects are seen by the
	// next: a Deployment's ReplicaSet, its pods, their binding, their
	// status), which follow at once up to maxBurst.
	writes, burst int
	// namespaces whose default ServiceAccount and root CA ConfigMap exist.
	namespaces map[string]bool
}

const maxBurst = 6

type postedStatus struct {
	digest string
	at     time.Time
}

// statusRepost: a kubelet reports an unchanged status again after this long
// (nodeStatusReportFrequency is 5 minutes; the lab keeps heartbeats fresher).
const (
	// fullResync: how often a round looks at the API although the
	// simulation did not change (what others changed through the API:
	// a deleted pod, a scaled Deployment, a cordon by kubectl).
	fullResync    = 2 * time.Second
	statusRepost  = time.Minute
	leaseRenew    = 10 * time.Second
	leaseDuration = 40
)

func newKubeAgent(s *Sim, c *cluster) *kubeAgent {
	a := &kubeAgent{
		sim: s, c: c, kcp: c.kube,
		kick: make(chan struct{}, 1), done: make(chan struct{}),
		kubelets: map[string]*kubeClient{}, posted: map[string]postedStatus{},
		leases: map[string]time.Time{}, csrs: map[string]time.Time{},
		kubeletAPIs: map[string]*kubeletAPI{},
	}

	a.wg.Add(1)

	go a.run()

	return a
}

func (a *kubeAgent) nudge() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

func (a *kubeAgent) close() {
	close(a.done)
	a.wg.Wait()
}

func (a *kubeAgent) run() {
	defer a.wg.Done()
	defer a.stopKubeletAPIs()

	tick := time.NewTicker(time.Second)
	defer tick.Stop()

	for {
		select {
		case <-a.done:
			return
		case <-a.kick:
		case <-tick.C:
		}

		a.round()
	}
}

// round brings the API one step towards what the simulation says.
func (a *kubeAgent) round() {
	addr, ok := a.kcp.serving()
	if !ok {
		return
	}

	a.kcp.mu.Lock()
	pki := a.kcp.pki
	a.kcp.mu.Unlock()

	if pki != a.pki {
		a.resetClients(pki, addr)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if !a.rbacDone {
		a.rbacDone = applyBootstrapRBAC(ctx, a.admin.as("talos")) == nil
	}

	s := a.sim

	s.mu.Lock()
	views := s.kubeletViews(a.c)
	approver := a.c.addons.approver

	var podCIDRs []string
	if cfg := a.kcp.pki.cfg; cfg != nil {
		podCIDRs = cfg.Cluster().Network().PodCIDRs()
	}

	var srcVersion string
	src := s.manifestSource(a.c)
	if src != nil {
		srcVersion = src.image.Version
	}

	extra := extraManifestObjects(src)
	s.mu.Unlock()

	// The simulation nudges the agent on every reconcile: a round that
	// would see what the last one saw waits for the resync.
	digest := fmt.Sprintf("%s|%p|%v|%+v|%s", addr, pki, approver, views, extraKey(extra))
	if digest == a.lastDigest && time.Since(a.lastFull) < fullResync {
		return
	}

	a.lastDigest, a.lastFull = digest, time.Now()
	before := a.writes

	var list struct {
		Items []obj `json:"items"`
	}

	if err := a.admin.do(ctx, http.MethodGet, "/api/v1/nodes", "", nil, &list); err != nil {
		return
	}

	current := map[string]obj{}
	for _, o := range list.Items {
		current[fieldString(o, "metadata", "name")] = o
	}

	alloc := newCIDRAllocator(podCIDRs, list.Items)
	changed := false

	// Each node's outcome flows back at once (Talos waits on its cordon).
	for _, v := range views {
		r := a.syncNode(ctx, v, current[v.name], alloc)
		changed = a.writeBack(v, r) || changed
	}

	if changed {
		s.nudge()
	}

	// Nodes registered in this round get their mirror pods in the next.
	a.syncMirrorPods(ctx, views, list.Items)
	a.syncCSRs(ctx, views, approver)

	if !a.manifestsDone {
		a.manifestsDone = applyBootstrapManifests(ctx, a.admin.as("talos"), bootstrapManifests(pki.cfg, srcVersion))
	}

	if key := extraKey(extra); a.manifestsDone && len(extra) > 0 && key != a.extraDone &&
		applyExtraManifests(ctx, a.admin.as("talos"), bootstrapManifests(pki.cfg, srcVersion), extra) {
		a.extraDone = key
	}

	a.syncWorkloads(ctx, views, list.Items)
	a.syncKubeletAPIs(views)

	if a.writes > before && a.burst < maxBurst {
		a.burst++
		a.lastDigest = ""
		a.nudge()
	} else {
		a.burst = 0
	}
}

// writeBack records what the API holds for a node in the simulation.
func (a *kubeAgent) writeBack(v kubeletView, r nodeResult) bool {
	s := a.sim

	s.mu.Lock()
	defer s.mu.Unlock()

	kn := a.c.kubeNodes[v.name]
	if kn == nil {
		return false
	}

	if r.gone && !v.live && (kn.node == nil || !kubeletRuns(kn.node.phase) || !kn.bootedAt.Equal(kn.node.bootedAt)) {
		delete(a.c.kubeNodes, v.name)

		return true
	}

	changed := false

	if r.registered && !kn.registered.Equal(v.boot) {
		kn.registered = v.boot
		changed = true
	}

	if kn.apiReady != r.ready {
		kn.apiReady = r.ready
		changed = true
	}

	kn.cordoned = r.cordoned

	return changed
}

func (a *kubeAgent) resetClients(pki *kubePKI, _ string) {
	if a.admin != nil {
		a.admin.close()
	}

	for _, c := range a.kubelets {
		c.close()
	}

	a.pki = pki
	a.stopKubeletAPIs() // their certificates are the old CA's
	a.admin = pki.client(a.apiAddr, "lab-controllers", "system:masters")
	a.admin.wrote = a.countWrite
	a.kubelets = map[string]*kubeClient{}
	a.rbacDone, a.manifestsDone, a.namespaces, a.extraDone = false, false, nil, ""
}

// countWrite is called on the agent's goroutine (its clients' requests).
func (a *kubeAgent) countWrite() { a.writes++ }

// apiAddr is the serving apiserver's address (it moves on a rolling restart).
func (a *kubeAgent) apiAddr() string {
	addr, _ := a.kcp.serving()

	return addr
}

// kubelet is the client with the node's kubelet identity.
func (a *kubeAgent) kubelet(name, version string) *kubeClient {
	c := a.kubelets[name]
	if c == nil {
		c = a.pki.client(a.apiAddr, "system:node:"+name, "system:nodes")
		c.wrote = a.countWrite
		a.kubelets[name] = c
	}

	return c.as("kubelet/" + version + " (linux/amd64) kubernetes")
}

// logErr logs a failed request once per distinct error (a conflict is the
// normal outcome of a concurrent update and is retried silently).
func (a *kubeAgent) logErr(what string, err error) {
	if err == nil || isKubeStatus(err, http.StatusConflict) {
		return
	}

	msg := what + ": " + err.Error()

	// An API error is logged once per request kind and reason: its
	// message names generated objects (pods of a DaemonSet) that differ
	// on every retry.
	key := msg

	var ke *kubeError
	if errors.As(err, &ke) {
		key = fmt.Sprintf("%s: %d %s", what, ke.Code, ke.Reason)
	}

	if a.logged[key] {
		return
	}

	if a.logged == nil {
		a.logged = map[string]bool{}
	}

	a.logged[key] = true
	a.sim.log.Warn("kubernetes client: "+msg, "cluster", a.c.id)
}
