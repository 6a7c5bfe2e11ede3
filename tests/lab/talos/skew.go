package talos

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SkewViolation is a moment when a kubelet ran a newer minor version of
// Kubernetes than the oldest kube-apiserver serving its cluster.
//
// The Kubernetes version skew policy: "kubelet must not be newer than
// kube-apiserver" and, in a highly available cluster, not newer than the
// oldest kube-apiserver instance
// (https://kubernetes.io/releases/version-skew-policy/#kubelet). Talos's
// own `talosctl upgrade-k8s` therefore moves every control plane component
// on every control plane before any kubelet
// (siderolabs/talos pkg/cluster/kubernetes/talos_managed.go, upgradeKubelet
// runs last).
type SkewViolation struct {
	Cluster string
	// Node is the hostname of the node whose kubelet is too new.
	Node      string
	Kubelet   string
	APIServer string // the oldest running kube-apiserver's version
	At        time.Time
}

func (v SkewViolation) String() string {
	return fmt.Sprintf("kubelet %s on %s is newer than the oldest kube-apiserver %s", v.Kubelet, v.Node, v.APIServer)
}

// SkewViolations returns every version-skew violation seen so far, each
// (node, kubelet, kube-apiserver) combination once.
func (s *Sim) SkewViolations() []SkewViolation {
	s.mu.Lock()
	defer s.mu.Unlock()

	return slices.Clone(s.skew)
}

// checkSkew records the kubelets of cluster c that run a newer minor than
// its oldest running kube-apiserver (sim.mu held). It runs whenever a
// node's configuration changes and on every reconcile step, so a
// violation that lasts an instant is seen.
func (s *Sim) checkSkew(clusterID string) {
	var apiServers, kubelets []*Node

	for n := range s.nodes {
		if n.phase != PhaseRunning || n.active == nil || n.active.Cluster().ID() != clusterID {
			continue
		}

		kubelets = append(kubelets, n)

		if isControlPlane(n.active) && !n.apiReadyAt.IsZero() {
			apiServers = append(apiServers, n)
		}
	}

	oldest, oldestTag := -1, ""

	for _, n := range apiServers {
		tag := imageTag(n.active.Cluster().APIServer().Image())
		if m, ok := minorOf(tag); ok && (oldest < 0 || m < oldest) {
			oldest, oldestTag = m, tag
		}
	}

	if oldest < 0 {
		return
	}

	for _, n := range kubelets {
		tag := imageTag(n.active.Machine().Kubelet().Image())
		if m, ok := minorOf(tag); !ok || m <= oldest {
			continue
		}

		v := SkewViolation{Cluster: clusterID, Node: n.hostname, Kubelet: tag, APIServer: oldestTag, At: time.Now()}
		key := v.Node + "|" + v.Kubelet + "|" + v.APIServer

		if s.skewSeen == nil {
			s.skewSeen = map[string]bool{}
		}

		if !s.skewSeen[key] {
			s.skewSeen[key] = true
			s.skew = append(s.skew, v)
			s.log.Warn("Kubernetes version skew: "+v.String(), "cluster", clusterID)
		}
	}
}

// minorOf is the minor version of a v1.N.x tag.
func minorOf(tag string) (int, bool) {
	rest, ok := strings.CutPrefix(strings.TrimPrefix(tag, "v"), "1.")
	if !ok {
		return 0, false
	}

	minor, _, _ := strings.Cut(rest, ".")
	m, err := strconv.Atoi(minor)

	return m, err == nil
}
