package talos

import (
	"context"
	"fmt"
	"strings"

	"github.com/cosi-project/runtime/pkg/resource"
	"github.com/cosi-project/runtime/pkg/state"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/constants"
	"github.com/siderolabs/talos/pkg/machinery/resources/k8s"
)

// publishKubeConfigs: the inputs Talos's Kubernetes controllers derive from
// the machine config (internal/app/machined/pkg/controllers/k8s): every
// node's KubeletConfig (kubelet_config.go), and on control planes the
// bootstrap manifests' config and the static pods' configs
// (control_plane.go). `talosctl health` reads them to know which checks
// apply: without a KubeletConfig it skips the kubelet check, without
// BootstrapManifestsConfig the node readiness and CoreDNS checks, and it
// expects a static pod for each static pod config.
func publishKubeConfigs(ctx context.Context, st state.State, snap resourceSnapshot) error {
	var (
		kubelet   []*k8s.KubeletConfig
		manifests []*k8s.BootstrapManifestsConfig
		apiserver []*k8s.APIServerConfig
		kcm       []*k8s.ControllerManagerConfig
		scheduler []*k8s.SchedulerConfig
	)

	if cfg := snap.active; cfg != nil {
		kubelet = append(kubelet, kubeletConfig(cfg))

		if isControlPlane(cfg) {
			manifests = append(manifests, bootstrapManifestsConfig(cfg, snap.image.Version))

			a := k8s.NewAPIServerConfig()
			a.TypedSpec().Image = cfg.Cluster().APIServer().Image()
			a.TypedSpec().ControlPlaneEndpoint = cfg.Cluster().Endpoint().String()
			a.TypedSpec().LocalPort = cfg.Cluster().LocalAPIServerPort()
			a.TypedSpec().ServiceCIDRs = cfg.Cluster().Network().ServiceCIDRs()
			a.TypedSpec().EtcdServers = []string{"https://localhost:2379"}
			apiserver = append(apiserver, a)

			m := k8s.NewControllerManagerConfig()
			m.TypedSpec().Enabled = true
			m.TypedSpec().Image = cfg.Cluster().ControllerManager().Image()
			m.TypedSpec().PodCIDRs = cfg.Cluster().Network().PodCIDRs()
			m.TypedSpec().ServiceCIDRs = cfg.Cluster().Network().ServiceCIDRs()
			kcm = append(kcm, m)

			sc := k8s.NewSchedulerConfig()
			sc.TypedSpec().Enabled = true
			sc.TypedSpec().Image = cfg.Cluster().Scheduler().Image()
			scheduler = append(scheduler, sc)
		}
	}

	if err := replaceAll(ctx, st, k8s.NewKubeletConfig(k8s.NamespaceName, "").Metadata(), kubelet); err != nil {
		return err
	}

	if err := replaceAll(ctx, st, emptyOf(k8s.NewBootstrapManifestsConfig()), manifests); err != nil {
		return err
	}

	if err := replaceAll(ctx, st, emptyOf(k8s.NewAPIServerConfig()), apiserver); err != nil {
		return err
	}

	if err := replaceAll(ctx, st, emptyOf(k8s.NewControllerManagerConfig()), kcm); err != nil {
		return err
	}

	if err := replaceAll(ctx, st, emptyOf(k8s.NewSchedulerConfig()), scheduler); err != nil {
		return err
	}

	return publishStaticPodStatuses(ctx, st, snap)
}

// emptyOf is the kind (namespace and type) of a resource, for listing.
func emptyOf(r resource.Resource) resource.Kind {
	md := r.Metadata()

	return resource.NewMetadata(md.Namespace(), md.Type(), "", resource.VersionUndefined)
}

// kubeletConfig is k8s/kubelet_config.go's output, abridged.
func kubeletConfig(cfg config.Provider) *k8s.KubeletConfig {
	r := k8s.NewKubeletConfig(k8s.NamespaceName, k8s.KubeletID)
	spec := r.TypedSpec()
	spec.Image = cfg.Machine().Kubelet().Image()
	spec.ClusterDomain = cfg.Cluster().Network().DNSDomain()
	spec.ClusterDNS = cfg.Machine().Kubelet().ClusterDNS()
	spec.CloudProviderExternal = externalCloudProvider(cfg)
	spec.DefaultRuntimeSeccompEnabled = cfg.Machine().Kubelet().DefaultRuntimeSeccompProfileEnabled()
	spec.AllowSchedulingOnControlPlane = cfg.Cluster().ScheduleOnControlPlanes()

	if len(spec.ClusterDNS) == 0 {
		if ips, err := cfg.Cluster().Network().DNSServiceIPs(); err == nil {
			for _, ip := range ips {
				spec.ClusterDNS = append(spec.ClusterDNS, ip.String())
			}
		}
	}

	return r
}

// bootstrapManifestsConfig is k8s/control_plane.go's manifests config: what
// the bootstrap manifests (CoreDNS, kube-proxy, flannel) are rendered from,
// by a node running Talos talosVersion: the CoreDNS and flannel images the
// configuration does not name are that release's (releaseAddons).
func bootstrapManifestsConfig(cfg config.Provider, talosVersion string) *k8s.BootstrapManifestsConfig {
	r := k8s.NewBootstrapManifestsConfig()
	spec := r.TypedSpec()
	cl := cfg.Cluster()

	spec.Server = cl.Endpoint().String()
	if kp := cfg.Machine().Features().KubePrism(); kp != nil && kp.Enabled() {
		spec.Server = fmt.Sprintf("https://127.0.0.1:%d", kp.Port())
	}

	spec.ClusterDomain = cl.Network().DNSDomain()
	spec.PodCIDRs = cl.Network().PodCIDRs()
	spec.ProxyEnabled = cl.Proxy().Enabled()
	spec.ProxyImage = cl.Proxy().Image()
	spec.CoreDNSEnabled = cl.CoreDNS().Enabled()
	spec.CoreDNSImage = coreDNSImage(cfg, talosVersion)
	spec.TalosAPIServiceEnabled = cfg.Machine().Features().KubernetesTalosAPIAccess().Enabled()
	spec.CNIName = cl.Network().CNI().Name()

	if ips, err := cl.Network().DNSServiceIPs(); err == nil {
		for _, ip := range ips {
			if ip.Is4() && spec.DNSServiceIP == "" {
				spec.DNSServiceIP = ip.String()
			} else if ip.Is6() && spec.DNSServiceIPv6 == "" {
				spec.DNSServiceIPv6 = ip.String()
			}
		}
	}

	if spec.CNIName == constants.FlannelCNI {
		spec.FlannelEnabled = true
		spec.FlannelImage = flannelImageOf(talosVersion)
		spec.FlannelExtraArgs = cl.Network().CNI().Flannel().ExtraArgs()
	}

	return r
}

// releaseAddons are the CoreDNS and flannel versions a Talos release
// deploys when the configuration names none: its machinery's
// constants.DefaultCoreDNSVersion and constants.FlannelVersion
// (siderolabs/talos pkg/machinery/constants at v1.12.7, v1.13.9 and
// v1.14.1). A `talosctl upgrade-k8s` after a Talos upgrade moves the
// cluster's CoreDNS and flannel to the new release's. Other minors use the
// lab's own machinery's.
var releaseAddons = map[string]struct{ coreDNS, flannel string }{
	"1.12": {"v1.13.2", "v0.27.4"},
	"1.13": {"v1.14.6", "v0.28.8"},
	"1.14": {"v1.14.7", "v0.28.9"},
}

// coreDNSImage is CoreDNS().Image() as a node running talosVersion
// computes it (v1alpha1 CoreDNS.Image: the configuration's image, else
// constants.CoreDNSImage at the release's default version).
func coreDNSImage(cfg config.Provider, talosVersion string) string {
	if raw := cfg.RawV1Alpha1(); raw != nil && raw.ClusterConfig != nil && raw.ClusterConfig.CoreDNSConfig != nil &&
		raw.ClusterConfig.CoreDNSConfig.CoreDNSImage != "" {
		return raw.ClusterConfig.CoreDNSConfig.CoreDNSImage
	}

	if a, ok := releaseAddons[kubeVersionOf(talosVersion)]; ok {
		return constants.CoreDNSImage + ":" + a.coreDNS
	}

	return cfg.Cluster().CoreDNS().Image()
}

// flannelImageOf is the flannel a node running talosVersion deploys
// (images.Flannel(): ghcr.io/siderolabs/flannel at constants.FlannelVersion).
func flannelImageOf(talosVersion string) string {
	v := constants.FlannelVersion
	if a, ok := releaseAddons[kubeVersionOf(talosVersion)]; ok {
		v = a.flannel
	}

	return "ghcr.io/siderolabs/flannel:v" + strings.TrimPrefix(v, "v")
}

// publishStaticPodStatuses: the kubelet's status of each static pod, as
// Talos's kubelet status controller copies it from the kubelet's
// /pods (k8s/kubelet_static_pod.go), keyed "kube-system/<pod>-<node>".
func publishStaticPodStatuses(ctx context.Context, st state.State, snap resourceSnapshot) error {
	var out []*k8s.StaticPodStatus

	if snap.active != nil && isControlPlane(snap.active) && snap.staticPodsUp && snap.nodename != "" {
		c := snap.active.Cluster()
		started := rfc3339(snap.bootedAt)

		for _, p := range []struct{ name, image string }{
			{"kube-apiserver", c.APIServer().Image()},
			{"kube-controller-manager", c.ControllerManager().Image()},
			{"kube-scheduler", c.Scheduler().Image()},
		} {
			r := k8s.NewStaticPodStatus(k8s.NamespaceName, resource.ID("kube-system/"+p.name+"-"+snap.nodename))
			r.TypedSpec().PodStatus = map[string]any{
				"phase":     "Running",
				"hostIP":    snap.addr.Addr().String(),
				"podIP":     snap.addr.Addr().String(),
				"startTime": started,
				"conditions": []any{
					map[string]any{"type": "Initialized", "status": "True", "lastTransitionTime": started},
					map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": started},
					map[string]any{"type": "ContainersReady", "status": "True", "lastTransitionTime": started},
					map[string]any{"type": "PodScheduled", "status": "True", "lastTransitionTime": started},
				},
				"containerStatuses": []any{map[string]any{
					"name": p.name, "image": p.image, "ready": true, "started": true, "restartCount": 0,
					"state": map[string]any{"running": map[string]any{"startedAt": started}},
				}},
			}
			out = append(out, r)
		}
	}

	return replaceAll(ctx, st, k8s.NewStaticPodStatus(k8s.NamespaceName, "").Metadata(), out)
}
