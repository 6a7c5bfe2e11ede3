package talosconfig

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/siderolabs/talos/pkg/machinery/config"
)

// removedIn is what a Kubernetes minor removed that a configuration may
// still name: feature gates (any control plane component), flags of each
// component, admission plugins, and API resources (group version resource).
type removedIn struct {
	featureGates                                         []string
	apiServerFlags, controllerManagerFlags, kubeletFlags []string
	admissionPlugins                                     []string
	apiResources                                         []string
}

// kubernetesRemovals is the table `talosctl upgrade-k8s` checks before an
// upgrade, by "from->to" minor: siderolabs/go-kubernetes v0.2.41 (the
// version talosctl v1.14.1 builds with) kubernetes/upgrade/checks.go
// newChecks, which cites each Kubernetes CHANGELOG and pull request. Paths
// with nothing removed that a configuration can name are absent.
var kubernetesRemovals = map[string]removedIn{
	"1.26->1.27": {
		controllerManagerFlags: []string{"enable-taint-manager", "pod-eviction-timeout"},
		kubeletFlags:           []string{"container-runtime", "master-service-namespace"},
		featureGates: []string{"ExpandCSIVolumes", "ExpandInUsePersistentVolumes", "ExpandPersistentVolumes",
			"ControllerManagerLeaderMigration", "CSIMigration", "CSIInlineVolume", "EphemeralContainers",
			"LocalStorageCapacityIsolation", "NetworkPolicyEndPort", "StatefulSetMinReadySeconds", "IdentifyPodOS",
			"DaemonSetUpdateSurge"},
	},
	"1.27->1.28": {
		featureGates: []string{"AdvancedAuditing", "DelegateFSGroupToCSIDriver", "DevicePlugins",
			"DisableAcceleratorUsageMetrics", "EndpointSliceTerminatingCondition", "CSIStorageCapacity", "CSIMigrationGCE",
			"KubeletCredentialProviders", "MixedProtocolLBService", "ServiceInternalTrafficPolicy", "ServiceIPStaticSubrange",
			"WindowsHostProcessContainers"},
	},
	"1.28->1.29": {
		apiResources: []string{"clustercidrs.v1alpha1.networking.k8s.io"},
	},
	"1.29->1.30": {
		featureGates: []string{"ExpandedDNSConfig", "ExperimentalHostUserNamespaceDefaultingGate", "IPTablesOwnershipCleanup",
			"KubeletPodResources", "KubeletPodResourcesGetAllocatable", "MinimizeIPTablesRestore", "ProxyTerminatingEndpoints",
			"RemoveSelfLink"},
		admissionPlugins: []string{"SecurityContextDeny"},
	},
	"1.30->1.31": {
		featureGates: []string{"APIPriorityAndFairness", "CSINodeExpandSecret", "ConsistentHTTPGetHandlers",
			"DefaultHostNetworkHostPortsInPodTemplates", "ServiceNodePortStaticSubrange", "SkipReadOnlyValidationGCE"},
		kubeletFlags: []string{"keep-terminated-pod-volumes", "iptables-masquerade-bit", "iptables-drop-bit"},
		controllerManagerFlags: []string{"volume-host-cidr-denylist", "volume-host-allow-local-loopback",
			"horizontal-pod-autoscaler-upscale-delay", "horizontal-pod-autoscaler-downscale-delay"},
	},
	"1.31->1.32": {
		featureGates: []string{"AllowServiceLBStatusOnNonLB", "CloudDualStackNodeIPs", "DRAControlPlaneController",
			"HPAContainerMetrics", "KMSv2", "KMSv2KDF", "LegacyServiceAccountTokenCleanUp", "MinDomainsInPodTopologySpread",
			"NewVolumeManagerReconstruction", "NodeOutOfServiceVolumeDetach", "ServerSideApply", "ServerSideFieldValidation",
			"StableLoadBalancerNodeSet", "ValidatingAdmissionPolicy", "ZeroLimitedNominalConcurrencyShares"},
		apiResources: []string{"podschedulingcontexts.v1alpha3.resource.k8s.io"},
	},
	"1.32->1.33": {
		featureGates: []string{"AppArmor", "AppArmorFields", "CPUManager", "DisableCloudProviders",
			"DisableKubeletCloudCredentialProviders", "JobPodFailurePolicy", "KubeProxyDrainingTerminatingNodes",
			"PDBUnhealthyPodEvictionPolicy", "PersistentVolumeLastPhaseTransitionTime", "VolumeCapacityPriority"},
		apiServerFlags: []string{"cloud-config"},
	},
	"1.33->1.34": {
		featureGates: []string{"DevicePluginCDIDevices", "LegacySidecarContainers", "PodDisruptionConditions"},
		kubeletFlags: []string{"cloud-config"},
	},
	"1.34->1.35": {
		kubeletFlags: []string{"pod-infra-container-image"},
		featureGates: []string{"SizeMemoryBackedVolumes", "UserNamespacesHostNetworkSupport"},
	},
	"1.35->1.36": {
		featureGates: []string{"CSIMigrationPortworx", "HonorPVReclaimPolicy", "InTreePluginPortworxUnregister",
			"WatchFromStorageWithoutResourceVersion"},
	},
	"1.36->1.37": {
		featureGates: []string{"AnyVolumeDataSource", "DeclarativeValidationTakeover", "GangScheduling",
			"PreventStaticPodAPIReferences", "WorkloadAwarePreemption"},
		apiResources: []string{"workloads.v1alpha2.scheduling.k8s.io", "podgroups.v1alpha2.scheduling.k8s.io"},
		kubeletFlags: []string{"application-metrics-count-limit", "boot-id-file", "container-hints", "containerd",
			"containerd-namespace", "enable-load-reader", "event-storage-age-limit", "event-storage-event-limit",
			"global-housekeeping-interval", "log-cadvisor-usage", "machine-id-file", "storage-driver-user",
			"storage-driver-password", "storage-driver-host", "storage-driver-db", "storage-driver-table",
			"storage-driver-secure", "storage-driver-buffer-duration"},
	},
}

// upgradePath is "1.35->1.36" for v1.35.4 -> v1.36.3 (upgrade-k8s's key).
func upgradePath(from, to string) (string, bool) {
	f, err1 := semver.ParseTolerant(from)
	t, err2 := semver.ParseTolerant(to)
	if err1 != nil || err2 != nil {
		return "", false
	}
	return fmt.Sprintf("%d.%d->%d.%d", f.Major, f.Minor, t.Major, t.Minor), true
}

// RemovedAPIResources are the API resources (resource.version.group) that
// Kubernetes removes on the upgrade from one version to the next: objects
// of them in the cluster must be migrated first (upgrade-k8s lists them).
func RemovedAPIResources(from, to string) []string {
	path, ok := upgradePath(from, to)
	if !ok {
		return nil
	}
	return slices.Clone(kubernetesRemovals[path].apiResources)
}

// KubernetesUpgradeProblems lists what a node's configuration still names
// that the Kubernetes upgrade from one version to the next removes, as
// `talosctl upgrade-k8s` refuses before it changes anything: a removed
// flag in a component's extraArgs, a removed feature gate in any control
// plane component's --feature-gates, a removed admission plugin in
// --enable-admission-plugins. Each problem names the configuration path to
// change. upgrade-k8s reads the running static pods' commands; the flags
// Talos itself sets are right for their version, so the user's extraArgs
// are what can go stale.
func KubernetesUpgradeProblems(cfg config.Provider, from, to string) []string {
	path, ok := upgradePath(from, to)
	if !ok || cfg == nil {
		return nil
	}
	r, ok := kubernetesRemovals[path]
	if !ok {
		return nil
	}
	_, toMinor, _ := strings.Cut(path, "->")
	var out []string
	add := func(where, what string) {
		out = append(out, fmt.Sprintf("%s: %s was removed in Kubernetes %s; drop it before upgrading from %s to %s", where, what, toMinor, from, to))
	}
	type component struct {
		path  string
		args  map[string][]string
		flags []string
	}
	comps := []component{{"machine.kubelet.extraArgs", cfg.Machine().Kubelet().ExtraArgs(), r.kubeletFlags}}
	if cfg.Machine().Type().IsControlPlane() {
		comps = append(comps,
			component{"cluster.apiServer.extraArgs", cfg.Cluster().APIServer().ExtraArgs(), r.apiServerFlags},
			component{"cluster.controllerManager.extraArgs", cfg.Cluster().ControllerManager().ExtraArgs(), r.controllerManagerFlags},
			component{"cluster.scheduler.extraArgs", cfg.Cluster().Scheduler().ExtraArgs(), nil}, // no scheduler flag removed in the range
		)
	}
	for i, c := range comps {
		for _, flag := range slices.Sorted(maps.Keys(c.args)) {
			if slices.Contains(c.flags, flag) {
				add(c.path, "flag --"+flag)
			}
		}
		if i == 0 {
			continue // upgrade-k8s checks feature gates of the control plane components only
		}
		for _, gate := range listValues(c.args["feature-gates"], func(s string) string { k, _, _ := strings.Cut(s, "="); return k }) {
			if slices.Contains(r.featureGates, gate) {
				add(c.path+".feature-gates", "feature gate "+gate)
			}
		}
		if c.path == "cluster.apiServer.extraArgs" {
			for _, p := range listValues(c.args["enable-admission-plugins"], func(s string) string { return s }) {
				if slices.Contains(r.admissionPlugins, p) {
					add(c.path+".enable-admission-plugins", "admission plugin "+p)
				}
			}
		}
	}
	return out
}

// listValues splits comma-separated flag values ("A=true,B=false") and maps
// each item to its name.
func listValues(values []string, name func(string) string) []string {
	var out []string
	for _, v := range values {
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, name(item))
			}
		}
	}
	return out
}
