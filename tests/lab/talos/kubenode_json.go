package talos

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/constants"
)

// kubeletView is what the simulated components know about one Node (taken
// under sim.mu, applied to the apiserver without it).
type kubeletView struct {
	name       string
	live       bool      // its kubelet runs (this boot)
	boot       time.Time // the boot it runs in
	bootID     string
	registered bool // registered in this boot already
	addr       string
	version    string // kubelet version tag
	cp         bool
	// kubelet's own: labels it registers with, taints it registers with
	// (--register-with-taints, the external cloud provider's), and status.
	labels     map[string]string
	taints     []kubeTaint
	conditions []kubeCondition
	nodeInfo   map[string]string
	capacity   map[string]string
	// Talos's node controller: labels, annotations and taints from the
	// machine config, and whether Talos cordons the node.
	cfgLabels, cfgAnnotations map[string]string
	cfgTaints                 []kubeTaint
	cordon                    bool
	// providerID the cloud controller manager sets ("" without one).
	providerID string
	// servingCSR: the kubelet requests a serving certificate.
	servingCSR bool
	staticPods []staticPod
}

type kubeTaint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

type kubeCondition struct {
	Type    string
	Status  string
	Reason  string
	Message string
}

// staticPod is a control plane static pod the kubelet mirrors into the API.
type staticPod struct {
	component string // kube-apiserver, kube-controller-manager, kube-scheduler
	image     string
}

// kubeletViews lists the cluster's Node objects as its kubelets and Talos
// see them (sim.mu held), by name: the agent's round compares them with the
// last round's (kubeAgent.round's digest), and an order that changed with
// the map's would make every tick a full round of the API.
func (s *Sim) kubeletViews(c *cluster) []kubeletView {
	var cps []*Node

	for m := range s.nodes {
		if m.phase == PhaseRunning && m.active != nil && isControlPlane(m.active) && !m.apiReadyAt.IsZero() &&
			m.active.Cluster().ID() == c.id {
			cps = append(cps, m)
		}
	}

	cni := cniOf(cps)

	out := make([]kubeletView, 0, len(c.kubeNodes))

	for _, kn := range c.kubeNodes {
		n := kn.node
		v := kubeletView{
			name: kn.name, boot: kn.bootedAt, registered: kn.registered.Equal(kn.bootedAt) && !kn.bootedAt.IsZero(),
			cordon: kn.unschedulable, providerID: kn.providerID,
		}

		v.live = n != nil && kubeletRuns(n.phase) && n.active != nil && kn.bootedAt.Equal(n.bootedAt)
		if !v.live {
			out = append(out, v)

			continue
		}

		st := kubeletPosts(n)
		cfg := st.cfg
		v.addr = st.addr.String()
		v.version = imageTag(cfg.Machine().Kubelet().Image())
		v.cp = isControlPlane(cfg)
		v.bootID = st.bootID
		v.servingCSR = rotatesServerCerts(cfg)

		v.labels = map[string]string{
			"beta.kubernetes.io/arch": "amd64",
			"beta.kubernetes.io/os":   "linux",
			"kubernetes.io/arch":      "amd64",
			"kubernetes.io/hostname":  kn.name,
			"kubernetes.io/os":        "linux",
		}

		v.cfgLabels = maps.Clone(map[string]string(cfg.Machine().NodeLabels()))
		if v.cfgLabels == nil {
			v.cfgLabels = map[string]string{}
		}

		v.cfgAnnotations = maps.Clone(map[string]string(cfg.Machine().NodeAnnotations()))

		// Talos labels control planes and, unless they take workloads,
		// taints them (internal/app/machined/pkg/controllers/k8s/
		// node_label_spec.go, node_taint_spec.go).
		if v.cp {
			v.cfgLabels["node-role.kubernetes.io/control-plane"] = ""
			v.cfgLabels["node.kubernetes.io/exclude-from-external-load-balancers"] = ""

			if !cfg.Cluster().ScheduleOnControlPlanes() {
				v.cfgTaints = append(v.cfgTaints, kubeTaint{Key: "node-role.kubernetes.io/control-plane", Effect: "NoSchedule"})
			}

			for _, comp := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
				v.staticPods = append(v.staticPods, staticPod{component: comp, image: componentImage(cfg, comp)})
			}
		}

		taints := cfg.Machine().NodeTaints()
		for _, key := range slices.Sorted(maps.Keys(taints)) { // in a stable order, as the views
			val := taints[key]
			value, effect, ok := strings.Cut(val, ":")
			if !ok {
				value, effect = "", val
			}

			v.cfgTaints = append(v.cfgTaints, kubeTaint{Key: key, Value: value, Effect: effect})
		}

		// kubelet --cloud-provider=external registers with this taint; the
		// cloud controller manager removes it once it initialised the node.
		if externalCloudProvider(cfg) {
			v.taints = append(v.taints, kubeTaint{Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true", Effect: "NoSchedule"})
		}

		ready, reason, msg := "True", "KubeletReady", "kubelet is posting ready status"
		switch {
		case !kn.shuttingDown.IsZero() && kn.shuttingDown.Equal(kn.bootedAt):
			ready, reason, msg = "False", "KubeletNotReady", "node is shutting down"
		case !networkReady(cni, n):
			ready, reason, msg = "False", "KubeletNotReady", cniNotReady
		}

		v.conditions = []kubeCondition{
			{"MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
			{"DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
			{"PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
			{"Ready", ready, reason, msg},
		}

		v.nodeInfo = map[string]string{
			"machineID":     st.nodeID,
			"systemUUID":    strings.ToLower(st.machine.UUID),
			"bootID":        v.bootID,
			"kernelVersion": constants.DefaultKernelVersion, // machinery's release

			"osImage":                 "Talos (" + st.version + ")",
			"containerRuntimeVersion": "containerd://" + constants.DefaultContainerdVersion,
			"kubeletVersion":          v.version,
			"kubeProxyVersion":        "",
			"operatingSystem":         "linux",
			"architecture":            "amd64",
		}

		v.capacity = map[string]string{
			"cpu":               fmt.Sprint(max(st.machine.Cores, 1)),
			"memory":            fmt.Sprintf("%dKi", max(st.machine.MemoryMiB, 1024)*1024),
			"pods":              "110",
			"ephemeral-storage": fmt.Sprintf("%dKi", systemDiskKi(st.machine)),
			"hugepages-2Mi":     "0",
			"hugepages-1Gi":     "0",
		}

		out = append(out, v)
	}

	slices.SortFunc(out, func(a, b kubeletView) int { return cmp.Compare(a.name, b.name) })

	return out
}

// kubeletRuns: the kubelet (and Talos's controllers) run while the node is up,
// also while an upgrade, reset or shutdown sequence drains it; they stop with
// the services, when the node reboots or powers off.
func kubeletRuns(p Phase) bool {
	return p == PhaseRunning || p == PhaseUpgrading || p == PhaseResetting || p == PhaseShuttingDown
}

func systemDiskKi(m Machine) uint64 {
	if len(m.Disks) == 0 {
		return 10 << 20
	}

	return m.Disks[0].SizeBytes / 1024
}

// componentImage is a control plane component's image from the config.
func componentImage(cfg config.Provider, comp string) string {
	cl := cfg.Cluster()

	switch comp {
	case "kube-apiserver":
		return cl.APIServer().Image()
	case "kube-controller-manager":
		return cl.ControllerManager().Image()
	default:
		return cl.Scheduler().Image()
	}
}
