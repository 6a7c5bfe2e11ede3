package talos

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
)

// The k8s.io containerd namespace of a node as CRI lists it (what `talosctl
// containers -k` shows): a sandbox per pod the kubelet runs and a container
// per container of the pod. Talos's machined answers Containers through
// its CRI inspector (internal/pkg/containers/cri/cri.go): the sandbox's ID
// and name are "<namespace>/<pod>", its image the sandbox (pause) image,
// state SANDBOX_READY; a container's ID is "<namespace>/<pod>:<name>:<first
// 12 of its container ID>", state CONTAINER_RUNNING.

// sandboxImage is containerd's default sandbox image as Talos lists it
// (pkg/images/list.go DefaultSandboxImage, v1.14.1; not tabled per release).
const sandboxImage = "registry.k8s.io/pause:3.10.2"

// criPod is a pod sandbox the node's kubelet runs.
type criPod struct {
	namespace, name, uid string
	containers           []criContainer
}

type criContainer struct {
	name, image, id string // id: the container ID without "containerd://"
}

// staticPodContainerID: the container ID of a static control plane pod, the
// same in its mirror pod's status (kubeagent_pods.go) and in CRI.
func staticPodContainerID(node, component, image string, boot time.Time) (hash, id string) {
	sum := sha256.Sum256([]byte(node + "|" + component + "|" + image + "|" + boot.String()))
	hash = fmt.Sprintf("%x", sum[:16])

	return hash, hash + hash
}

// podContainerID: the container ID the kubelet reports for a scheduled
// pod's container (runningStatus): 64 hex digits, as containerd's.
func podContainerID(uid, container string) string {
	return fmt.Sprintf("%x", sha256.Sum256([]byte(uid+"|"+container)))
}

// setCRIPods records what each live kubelet of the cluster runs in this
// boot (agent goroutine, after runPods).
func (s *Sim) setCRIPods(c *cluster, views []kubeletView, pods map[string][]criPod) {
	s.mu.Lock()
	defer s.mu.Unlock()

	for _, v := range views {
		kn := c.kubeNodes[v.name]
		if !v.live || kn == nil || kn.node == nil {
			continue
		}

		kn.node.criPods, kn.node.criBoot = pods[v.name], v.boot

		if slices.ContainsFunc(pods[v.name], writesFlannelConf) {
			kn.node.cniConfBoot = v.boot
		}
	}
}

// writesFlannelConf: a started pod of Talos's flannel DaemonSet, whose
// install-config init container copies the CNI configuration to the host's
// /etc/cni/net.d (k8stemplates/flannel.go). The file outlives the pod, so
// the node keeps it for the boot even if the pod is deleted.
func writesFlannelConf(p criPod) bool {
	return p.namespace == "kube-system" && slices.ContainsFunc(p.containers, func(c criContainer) bool { return c.name == "kube-flannel" })
}

// criContainers lists the node's k8s.io namespace: its static control plane
// pods (run by the kubelet from Talos's manifests, with or without an API
// server) and the scheduled pods its kubelet started in this boot (sim.mu
// held).
func (n *Node) criContainers(ns string) []*machine.ContainerInfo {
	var pods []criPod

	if cfg := n.active; cfg != nil && isControlPlane(cfg) {
		c := cfg.Cluster()
		host := strings.ToLower(n.hostname)

		for _, p := range []struct{ name, image string }{
			{"kube-apiserver", c.APIServer().Image()},
			{"kube-controller-manager", c.ControllerManager().Image()},
			{"kube-scheduler", c.Scheduler().Image()},
		} {
			hash, id := staticPodContainerID(host, p.name, p.image, n.bootedAt)
			pods = append(pods, criPod{
				namespace: "kube-system", name: p.name + "-" + host, uid: hash,
				containers: []criContainer{{name: p.name, image: p.image, id: id}},
			})
		}
	}

	if n.criBoot.Equal(n.bootedAt) {
		pods = append(pods, n.criPods...)
	}

	var list []*machine.ContainerInfo

	for i, p := range pods {
		podID := p.namespace + "/" + p.name
		list = append(list, &machine.ContainerInfo{
			Namespace: ns, Id: podID, PodId: podID, Name: podID, Uid: p.uid,
			Image: sandboxImage, Pid: uint32(2000 + 100*i), Status: "SANDBOX_READY",
		})

		for j, ctr := range p.containers {
			list = append(list, &machine.ContainerInfo{
				Namespace: ns, Id: podID + ":" + ctr.name + ":" + ctr.id[:min(12, len(ctr.id))], InternalId: ctr.id,
				PodId: podID, Name: ctr.name, Image: ctr.image, Pid: uint32(2000 + 100*i + 1 + j), Status: "CONTAINER_RUNNING",
			})
		}
	}

	return list
}

// criPodOf is the sandbox and containers of a started pod.
func criPodOf(p obj) criPod {
	cp := criPod{
		namespace: fieldString(p, "metadata", "namespace"),
		name:      fieldString(p, "metadata", "name"),
		uid:       fieldString(p, "metadata", "uid"),
	}

	containers, _ := field(p, "spec", "containers").([]any)
	for _, c := range containers {
		m, _ := c.(map[string]any)
		name, _ := m["name"].(string)
		image, _ := m["image"].(string)
		cp.containers = append(cp.containers, criContainer{name: name, image: image, id: podContainerID(cp.uid, name)})
	}

	return cp
}
