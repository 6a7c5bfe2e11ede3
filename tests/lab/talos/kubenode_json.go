package talos

import (
	"fmt"
	"maps"
	"strings"
	"time"
)

// Kubernetes Node object, reduced to the fields the lab fills (core/v1).
type kubeNodeJSON struct {
	Kind       string       `json:"kind"`
	APIVersion string       `json:"apiVersion"`
	Metadata   kubeMeta     `json:"metadata"`
	Spec       kubeNodeSpec `json:"spec"`
	Status     kubeNodeStat `json:"status"`
}

type kubeMeta struct {
	Name              string            `json:"name"`
	UID               string            `json:"uid"`
	ResourceVersion   string            `json:"resourceVersion"`
	CreationTimestamp string            `json:"creationTimestamp"`
	Labels            map[string]string `json:"labels,omitempty"`
	Annotations       map[string]string `json:"annotations,omitempty"`
}

type kubeTaint struct {
	Key       string `json:"key"`
	Value     string `json:"value,omitempty"`
	Effect    string `json:"effect"`
	TimeAdded string `json:"timeAdded,omitempty"`
}

type kubeNodeSpec struct {
	PodCIDR       string      `json:"podCIDR,omitempty"`
	ProviderID    string      `json:"providerID,omitempty"`
	Unschedulable bool        `json:"unschedulable,omitempty"`
	Taints        []kubeTaint `json:"taints,omitempty"`
}

type kubeCondition struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	LastHeartbeatTime  string `json:"lastHeartbeatTime"`
	LastTransitionTime string `json:"lastTransitionTime"`
	Reason             string `json:"reason"`
	Message            string `json:"message"`
}

type kubeAddress struct {
	Type    string `json:"type"`
	Address string `json:"address"`
}

type kubeNodeStat struct {
	Conditions []kubeCondition   `json:"conditions"`
	Addresses  []kubeAddress     `json:"addresses,omitempty"`
	NodeInfo   map[string]string `json:"nodeInfo"`
	Capacity   map[string]string `json:"capacity,omitempty"`
}

// nodeJSON renders a node as kube-apiserver would now (sim.mu held): labels
// and taints from the node's current config, Ready from its kubelet.
func (s *Sim) nodeJSON(c *cluster, kn *kubeNode) kubeNodeJSON {
	n := kn.node
	now := time.Now().UTC().Format(time.RFC3339)
	created := kn.createdAt.UTC().Format(time.RFC3339)

	out := kubeNodeJSON{
		Kind: "Node", APIVersion: "v1",
		Metadata: kubeMeta{
			Name: kn.name, UID: kn.uid, ResourceVersion: "1", CreationTimestamp: created,
			Labels: map[string]string{
				"beta.kubernetes.io/arch": "amd64",
				"beta.kubernetes.io/os":   "linux",
				"kubernetes.io/arch":      "amd64",
				"kubernetes.io/hostname":  kn.name,
				"kubernetes.io/os":        "linux",
			},
		},
		Spec: kubeNodeSpec{ProviderID: kn.providerID, Unschedulable: kn.unschedulable},
	}

	live := n != nil && n.phase == PhaseRunning && n.active != nil && kn.bootedAt.Equal(n.bootedAt)

	var cps []*Node

	for m := range s.nodes {
		if m.phase == PhaseRunning && m.active != nil && isControlPlane(m.active) && !m.apiReadyAt.IsZero() &&
			m.active.Cluster().ID() == c.id {
			cps = append(cps, m)
		}
	}

	ready, reason, msg := "True", "KubeletReady", "kubelet is posting ready status"

	if !live {
		ready, reason, msg = "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status."
	} else if ok, why := cniReady(cps); !ok {
		ready, reason, msg = "False", "KubeletNotReady", why
	}

	out.Status.Conditions = []kubeCondition{
		{Type: "MemoryPressure", Status: "False", Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
		{Type: "DiskPressure", Status: "False", Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
		{Type: "PIDPressure", Status: "False", Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
		{Type: "Ready", Status: ready, Reason: reason, Message: msg},
	}

	for i := range out.Status.Conditions {
		out.Status.Conditions[i].LastHeartbeatTime = now
		out.Status.Conditions[i].LastTransitionTime = created
	}

	st := kn.posted
	if live {
		st = kubeletPosts(n)
	}

	if st.cfg == nil {
		return out
	}

	cfg := st.cfg

	if isControlPlane(cfg) {
		out.Metadata.Labels["node-role.kubernetes.io/control-plane"] = ""
		out.Metadata.Labels["node.kubernetes.io/exclude-from-external-load-balancers"] = ""

		if !cfg.Cluster().ScheduleOnControlPlanes() {
			out.Spec.Taints = append(out.Spec.Taints, kubeTaint{Key: "node-role.kubernetes.io/control-plane", Effect: "NoSchedule"})
		}
	}

	maps.Copy(out.Metadata.Labels, cfg.Machine().NodeLabels())

	if ann := cfg.Machine().NodeAnnotations(); len(ann) > 0 {
		out.Metadata.Annotations = maps.Clone(map[string]string(ann))
	}

	for key, val := range cfg.Machine().NodeTaints() {
		value, effect, ok := strings.Cut(val, ":")
		if !ok {
			value, effect = "", val
		}

		out.Spec.Taints = append(out.Spec.Taints, kubeTaint{Key: key, Value: value, Effect: effect})
	}

	if externalCloudProvider(cfg) && kn.providerID == "" {
		out.Spec.Taints = append(out.Spec.Taints, kubeTaint{Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true", Effect: "NoSchedule"})
	}

	if kn.unschedulable {
		out.Spec.Taints = append(out.Spec.Taints, kubeTaint{Key: "node.kubernetes.io/unschedulable", Effect: "NoSchedule", TimeAdded: now})
	}

	if ready != "True" {
		key := "node.kubernetes.io/not-ready"
		if ready == "Unknown" {
			key = "node.kubernetes.io/unreachable"
		}

		out.Spec.Taints = append(out.Spec.Taints, kubeTaint{Key: key, Effect: "NoSchedule", TimeAdded: now})
	}

	if st.addr.IsValid() {
		out.Status.Addresses = []kubeAddress{{Type: "InternalIP", Address: st.addr.String()}, {Type: "Hostname", Address: kn.name}}
	}

	out.Status.NodeInfo = map[string]string{
		"kubeletVersion":          imageTag(cfg.Machine().Kubelet().Image()),
		"osImage":                 "Talos (" + st.version + ")",
		"operatingSystem":         "linux",
		"architecture":            "amd64",
		"containerRuntimeVersion": "containerd://2.1.0",
		"kernelVersion":           "6.12.0-talos",
		"machineID":               st.nodeID,
		"systemUUID":              strings.ToLower(st.machine.UUID),
	}
	out.Status.Capacity = map[string]string{
		"cpu":    fmt.Sprint(max(st.machine.Cores, 1)),
		"memory": fmt.Sprintf("%dKi", max(st.machine.MemoryMiB, 1024)*1024),
		"pods":   "110",
	}

	return out
}
