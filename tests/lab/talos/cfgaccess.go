package talos

import (
	"net/url"

	"github.com/siderolabs/talos/pkg/machinery/config/config"
	"github.com/siderolabs/talos/pkg/machinery/config/types/v1alpha1"
)

// Talos 1.14's machinery reads the cluster identity and the Kubernetes
// settings through DiscoveryIdentityConfig and the K8s*Config accessors,
// which answer from the v1alpha1 sections (configurations of every older
// contract) or from the 1.14 documents (DiscoveryIdentityConfig,
// KubeletConfig, KubeAPIServerConfig, ...) alike (config/config/config.go,
// config/container/container.go at v1.14.1). These helpers return "" or
// nil where a configuration has neither.

func clusterID(cfg config.Config) string {
	if d := cfg.DiscoveryIdentityConfig(); d != nil {
		return d.ClusterID()
	}

	return ""
}

func clusterName(cfg config.Config) string {
	if c := cfg.K8sClusterConfig(); c != nil {
		return c.ClusterName()
	}

	return ""
}

func clusterEndpoint(cfg config.Config) *url.URL {
	if c := cfg.K8sClusterConfig(); c != nil {
		return c.ClusterEndpoint()
	}

	return nil
}

func kubeletImage(cfg interface {
	K8sKubeletConfig() config.K8sKubeletConfig
}) string {
	if k := cfg.K8sKubeletConfig(); k != nil {
		return k.Image()
	}

	return ""
}

func kubeletArg(cfg config.Config, name string) string {
	if k := cfg.K8sKubeletConfig(); k != nil {
		if v := k.ExtraArgs()[name]; len(v) > 0 {
			return v[0]
		}
	}

	return ""
}

func apiServerImage(cfg config.Config) string {
	if a := cfg.K8sAPIServerConfig(); a != nil {
		return a.Image()
	}

	return ""
}

// apiServerPort is the port kube-apiserver listens on (cluster.apiServer
// port, default 6443).
func apiServerPort(cfg config.Config) int {
	if a := cfg.K8sAPIServerConfig(); a != nil {
		return a.APIPort()
	}

	return 6443
}

// controlPlaneImages are kube-apiserver's, kube-controller-manager's and
// kube-scheduler's images, in that order.
func controlPlaneImages(cfg interface {
	K8sAPIServerConfig() config.K8sAPIServerConfig
	K8sControllerManagerConfig() config.K8sControllerManagerConfig
	K8sSchedulerConfig() config.K8sSchedulerConfig
},
) [3]string {
	var out [3]string
	if a := cfg.K8sAPIServerConfig(); a != nil {
		out[0] = a.Image()
	}

	if c := cfg.K8sControllerManagerConfig(); c != nil {
		out[1] = c.Image()
	}

	if s := cfg.K8sSchedulerConfig(); s != nil {
		out[2] = s.Image()
	}

	return out
}

// legacyCluster is the v1alpha1 cluster section ("" CNI and no manifests
// without one).
func legacyCluster(cfg interface{ RawV1Alpha1() *v1alpha1.Config }) *v1alpha1.ClusterConfig {
	if raw := cfg.RawV1Alpha1(); raw != nil && raw.ClusterConfig != nil {
		return raw.ClusterConfig
	}

	return &v1alpha1.ClusterConfig{}
}
