package talos

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/constants"
)

// kubeNode is a Node object in the cluster's Kubernetes API as the lab's
// kubelets and controllers know it. It outlives the machine's runtime: a
// node that is off or reset stays (NotReady) until someone deletes it, as in
// Kubernetes; the agent (kubeagent.go) forgets it once it is gone from the
// API and no kubelet runs for it.
type kubeNode struct {
	name          string
	node          *Node     // the runtime whose kubelet registered it last
	bootedAt      time.Time // boot of that runtime
	unschedulable bool      // Talos cordons it (drain before reboot/upgrade/reset)
	providerID    string    // what the cloud controller manager sets
	// registered is the boot whose kubelet registered the object (or found
	// it registered); apiReady the Ready condition the API holds, as
	// Talos's node status controller reads it.
	registered time.Time
	apiReady   string
	cordoned   bool // the API holds Talos's cordon (talos.dev/cordoned)
	// shuttingDown is the boot whose kubelet got the shutdown signal.
	shuttingDown time.Time
}

// kubeletStatus is the part of a Node object's status and metadata that
// its kubelet (and Talos' node controller) posts.
type kubeletStatus struct {
	addr    netip.Addr
	cfg     config.Provider
	version string
	nodeID  string
	bootID  string
	machine Machine
}

// kubeletPosts is what a running node's kubelet reports (sim.mu held).
func kubeletPosts(n *Node) kubeletStatus {
	st := kubeletStatus{addr: n.addr, cfg: n.active, version: n.image.Version, machine: n.machine}
	if n.ps != nil {
		st.nodeID = n.ps.nodeID
	}

	// The kubelet's nodeInfo.bootID is cadvisor's MachineInfo.BootID, read
	// from /proc/sys/kernel/random/boot_id (google/cadvisor machine/info.go,
	// -boot_id_file): the file machined's Read serves, one ID per boot.
	if n.servers != nil && n.servers.logs != nil {
		st.bootID = n.servers.logs.bootID
	}

	return st
}

// ccmKind says which cloud controller manager the cluster's manifests run.
type ccmKind int

const (
	ccmNone ccmKind = iota
	ccmTalos
	ccmProxmox
)

// clusterAddons is what the control planes' manifests install, as far as
// the lab models it: a CCM, the kubelet serving cert approver, a CNI.
type clusterAddons struct {
	ccm      ccmKind
	approver bool
}

func addonsOf(cps []*Node) clusterAddons {
	var a clusterAddons

	for _, n := range cps {
		text := manifestText(n.active)

		switch {
		case strings.Contains(text, "talos-cloud-controller-manager"):
			a.ccm = ccmTalos
		case strings.Contains(text, "proxmox-cloud-controller-manager") && a.ccm == ccmNone:
			a.ccm = ccmProxmox
		}

		if strings.Contains(text, "kubelet-serving-cert-approver") {
			a.approver = true
		}
	}

	return a
}

// manifestText joins what a control plane applies: extra manifest URLs,
// external cloud provider manifests, CNI URLs and inline manifests.
func manifestText(cfg config.Provider) string {
	cl := cfg.Cluster()

	parts := slices.Concat(cl.ExtraManifestURLs(), cl.Network().CNI().URLs())
	if cl.ExternalCloudProvider().Enabled() {
		parts = append(parts, cl.ExternalCloudProvider().ManifestURLs()...)
	}

	for _, m := range cl.InlineManifests() {
		parts = append(parts, m.Name(), m.Contents())
	}

	return strings.Join(parts, "\n")
}

// cniNotReady is the kubelet's Ready message while the container runtime
// finds no CNI configuration (containerd's NetworkPluginNotReady).
const cniNotReady = "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"

// cniMode is how the cluster's nodes get their pod network.
type cniMode int

const (
	// cniMissing: cluster.network.cni.name "none" and no CNI in the
	// manifests: nodes stay NotReady until one is installed.
	cniMissing cniMode = iota
	// cniFlannel: Talos's flannel (the default CNI). A node's network is
	// ready once the flannel DaemonSet's pod has run on it in this boot
	// (Node.cniConfBoot): its init container writes the CNI configuration
	// the container runtime waits for, as on a real node, so a node is
	// Ready only after the DaemonSet controller has synced the bootstrap
	// DaemonSets (kube-proxy's status with them), the order Talos's
	// health checks (pkg/cluster/check/default.go: "all k8s nodes to
	// report ready", then "kube-proxy to report ready") rely on.
	cniFlannel
	// cniAssumed: a CNI from "custom" URLs or the manifests, whose pods the
	// lab does not run: the network counts as ready.
	cniAssumed
)

// cniOf recognises the cluster's CNI from its control planes' configs
// (common CNIs by name in the manifests).
func cniOf(cps []*Node) cniMode {
	for _, n := range cps {
		switch cni := n.active.Cluster().Network().CNI(); cni.Name() {
		case constants.FlannelCNI:
			return cniFlannel
		case constants.NoneCNI:
		default:
			return cniAssumed
		}

		text := strings.ToLower(manifestText(n.active))
		for _, name := range []string{"cilium", "calico", "flannel", "kube-router", "antrea", "weave"} {
			if strings.Contains(text, name) {
				return cniAssumed
			}
		}
	}

	return cniMissing
}

// networkReady: the node's container runtime has a CNI configuration (sim.mu held).
func networkReady(mode cniMode, n *Node) bool {
	switch mode {
	case cniFlannel:
		return n.cniConfBoot.Equal(n.bootedAt)
	case cniAssumed:
		return true
	default:
		return false
	}
}

func externalCloudProvider(cfg config.Provider) bool {
	return kubeletArg(cfg, "cloud-provider") == "external"
}

func rotatesServerCerts(cfg config.Provider) bool {
	return kubeletArg(cfg, "rotate-server-certificates") == "true"
}

// kubeletArg is a kubelet extra argument's value: machinery v1.13 keeps
// repeatable values (map[string][]string); the kubelet takes the last.
func kubeletArg(cfg config.Provider, name string) string {
	if v := cfg.Machine().Kubelet().ExtraArgs()[name]; len(v) > 0 {
		return v[len(v)-1]
	}

	return ""
}

// reconcileKubelets starts the kubelets of nodes that reach the API server
// (the agent registers them) and says what the cluster's cloud controller
// manager would set as providerID.
func (s *Sim) reconcileKubelets(c *cluster, nodes []*Node, now time.Time, after *[]func()) bool {
	changed := false

	var cps []*Node

	for _, n := range nodes {
		if isControlPlane(n.active) && !n.apiReadyAt.IsZero() {
			cps = append(cps, n)
		}
	}

	if len(cps) == 0 {
		return false
	}

	addons := addonsOf(cps)
	c.addons = addons

	for _, n := range nodes {
		if now.Before(n.bootedAt.Add(s.scaled(kubeletDuration))) || n.hostname == "" {
			continue
		}

		if !s.apiReachable(c, n) && n.apiReadyAt.IsZero() {
			continue
		}

		name := strings.ToLower(n.hostname)

		kn := c.kubeNodes[name]
		if kn == nil {
			kn = &kubeNode{name: name}
			c.kubeNodes[name] = kn
			changed = true
		}

		if kn.node != n || !kn.bootedAt.Equal(n.bootedAt) {
			if kn.node != nil && kn.node != n && kn.node.phase == PhaseRunning && kn.node.active != nil {
				*after = append(*after, func() {
					n.logf("another running node already registered this node name in Kubernetes", "name", name)
				})
			}

			// Talos uncordons the node when it boots (after an upgrade or reset drain).
			kn.node, kn.bootedAt, kn.unschedulable = n, n.bootedAt, false
			changed = true
		}

		if addons.ccm != ccmNone && externalCloudProvider(n.active) && kn.providerID == "" {
			kn.providerID = providerID(addons.ccm, n)
			changed = true
		}
	}

	return changed
}

// providerID as the CCMs set it: the Talos CCM uses the platform metadata's
// provider ID, falling back to talos://<platform>/<node IP> (nocloud gives
// none; siderolabs/talos-cloud-controller-manager pkg/talos/instances.go);
// the Proxmox CCM uses proxmox://<region>/<vmid>, the lab's region being "lab".
func providerID(kind ccmKind, n *Node) string {
	switch kind {
	case ccmTalos:
		return fmt.Sprintf("talos://%s/%s", n.image.Platform, n.addr)
	case ccmProxmox:
		return fmt.Sprintf("proxmox://lab/%d", n.machine.VMID)
	default:
		return ""
	}
}
