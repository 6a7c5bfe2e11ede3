package talos

import (
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
)

// wantKube tells the cluster's real control plane what it should be
// (sim.mu held) and returns the addresses it serves on now. pods are the
// control planes whose kube-apiserver static pod runs. Log lines go to
// after: Node.logf takes sim.mu, so calling it here hung the whole lab (every
// Talos API call then waits on sim.mu in apiFault).
func (s *Sim) wantKube(c *cluster, pods []*Node, after *[]func()) map[netip.Addr]bool {
	if len(pods) == 0 {
		if c.kube != nil {
			c.kube.set(kubeWant{})
		}

		return nil
	}

	if c.kube == nil {
		tools, err := FindKubeTools()
		if err != nil {
			if !c.kubeMissingLogged {
				c.kubeMissingLogged = true
				n, msg := pods[0], "kube-apiserver fails to start: "+err.Error()
				*after = append(*after, func() { n.logf(msg) })
			}

			return nil
		}

		c.kube = newKubeControlPlane(s, c.id, tools)
		c.agent = newKubeAgent(s, c)
	}

	first := pods[0]
	w := kubeWant{
		run:   true,
		store: first.etcdCluster.id,
		cfg:   first.active,
	}

	w.etcdMembers, w.etcdGW = podMembers(first.etcdCluster, pods), first.etcdCluster.real

	oldest := ""

	for _, n := range pods {
		w.sans = append(w.sans, n.addr)
		w.sans = append(w.sans, configVIPs(n.active)...)

		tag := imageTag(n.active.Cluster().APIServer().Image())
		if m, ok := minorOf(tag); ok {
			if o, _ := minorOf(oldest); oldest == "" || m < o {
				oldest = tag
			}
		}
	}

	slices.SortFunc(w.sans, func(a, b netip.Addr) int { return a.Compare(b) })
	w.sans = slices.Compact(w.sans)

	emulate, note := emulatedVersion(oldest, c.kube.tools.KubernetesVersion)
	w.emulate = emulate

	if note != "" && c.kubeVersionNote != note {
		c.kubeVersionNote = note
		*after = append(*after, func() { first.logf(note) })
	}

	c.kube.set(w)
	c.agent.nudge()

	return c.kube.servedAddrs()
}

// podMembers are the client endpoints (host:port) of the voting members
// of ec on the control planes whose apiserver pod runs: each such pod
// talks to its own node's member (etcdlocal.go); a learner serves no
// client requests.
func podMembers(ec *etcdCluster, pods []*Node) []string {
	var out []string

	for _, n := range pods {
		if n.etcdCluster != ec || n.etcd == nil || n.etcd.learner {
			continue
		}

		if a, err := netip.ParseAddr(n.etcd.addr); err == nil {
			out = append(out, netip.AddrPortFrom(a, 2379).String())
		}
	}

	slices.Sort(out)

	return out
}

// closeKube stops every cluster's agent and real control plane and removes
// their files.
func (s *Sim) closeKube() {
	s.mu.Lock()

	var clusters []*cluster

	for _, c := range s.clusters {
		if c.kube != nil {
			clusters = append(clusters, c)
		}
	}
	s.mu.Unlock()

	for _, c := range clusters {
		c.agent.close()
		c.kube.close()
	}

	if s.dir != "" {
		os.RemoveAll(s.dir) //nolint:errcheck
	}
}

// emulatedVersion is the --emulated-version for a cluster whose oldest
// control plane runs Kubernetes tag, served by the lab's apiserver binary:
// kube-apiserver emulates down to three minors below its own, never below
// 1.31 (k8s.io/apiserver pkg/util/compatibility/version.go). A version it
// cannot emulate is served as the binary's own, with a note for the log.
func emulatedVersion(tag, binary string) (string, string) {
	want, ok := minorOf(tag)
	have, ok2 := minorOf(binary)

	if !ok || !ok2 || want == have {
		return "", ""
	}

	floor := max(have-3, 31)

	switch {
	case want > have:
		return "", fmt.Sprintf("the cluster runs Kubernetes %s, newer than the lab's kube-apiserver %s: the API is %s's", tag, binary, binary)
	case want < floor:
		return "", fmt.Sprintf("the cluster runs Kubernetes %s, older than the lab's kube-apiserver %s can emulate (1.%d): the API is %s's", tag, binary, floor, binary)
	default:
		return "1." + strconv.Itoa(want), ""
	}
}

// kubeVersionOf is "1.35" of "v1.35.2".
func kubeVersionOf(tag string) string {
	parts := strings.SplitN(strings.TrimPrefix(tag, "v"), ".", 3)
	if len(parts) < 2 {
		return ""
	}

	return parts[0] + "." + parts[1]
}
