package talosconfig

import (
	"fmt"

	"github.com/blang/semver/v4"
	"github.com/siderolabs/talos/pkg/machinery/config"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosrelease"
)

// A node checks each Kubernetes image tag of its configuration against its
// own Talos version when it takes the configuration (v1alpha1
// RuntimeValidate -> ValidateKubernetesImageTag, config/types/v1alpha1/
// v1alpha1_validation.go at v1.13.9): the kubelet's everywhere, the control
// plane components' on control planes. machinery's Validate does not, so a
// configuration with a kubelet image its node refuses would pass preview;
// imageTagErrorsFor makes the node's check, with the node's version, and
// the node's wording.
func imageTagErrorsFor(cfg config.Provider, talos semver.Version) []error {
	raw := cfg.RawV1Alpha1()
	if raw == nil || raw.MachineConfig == nil {
		return nil
	}
	type image struct{ component, ref string }
	images := []image{{"kubelet", raw.Machine().Kubelet().Image()}}
	if raw.ClusterConfig != nil && raw.Machine().Type().IsControlPlane() {
		c := raw.Cluster()
		images = append(images,
			image{"kube-apiserver", c.APIServer().Image()},
			image{"kube-controller-manager", c.ControllerManager().Image()},
			image{"kube-scheduler", c.Scheduler().Image()})
	}
	var errs []error
	for _, im := range images {
		if err := talosrelease.KubernetesImageSupported(talos, im.ref); err != nil {
			errs = append(errs, fmt.Errorf("%s image is not valid: %w", im.component, err))
		}
	}
	return errs
}
