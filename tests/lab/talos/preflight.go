package talos

import (
	"fmt"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/compatibility"
	"github.com/siderolabs/talos/pkg/machinery/config"
)

// upgradePreflight is the installer's pre-flight in upgrade mode
// (siderolabs/talos v1.12.5 cmd/installer/pkg/install/preflight.go, run by
// Installer.Install before it touches the disk): the installer's Talos
// must accept an upgrade from the host's (compatibility UpgradeableFrom:
// e.g. 1.12.5 -> 1.8.0 is "host version 1.12.5 is too new to downgrade to
// Talos 1.8.0"), and must support the Kubernetes the host runs (kubelet
// everywhere, the control plane components on control planes). The Upgrade
// API call has already answered by then: the failure ends the upgrade
// sequence, which machined treats as fatal (main.go, "fatal sequencer
// error"), so the node reboots into the version it has installed.
func upgradePreflight(host, installer string, cfg config.Provider) error {
	if err := preflightChecks(host, installer, cfg); err != nil {
		return fmt.Errorf("pre-flight checks failed: %w", err)
	}

	return nil
}

func preflightChecks(host, installer string, cfg config.Provider) error {
	hostVersion, err := compatibility.ParseTalosVersion(&machine.VersionInfo{Tag: host})
	if err != nil {
		return fmt.Errorf("error parsing host Talos version: %w", err)
	}

	installerVersion, err := compatibility.ParseTalosVersion(&machine.VersionInfo{Tag: installer})
	if err != nil {
		return fmt.Errorf("error parsing installer Talos version: %w", err)
	}

	if err := installerVersion.UpgradeableFrom(hostVersion); err != nil {
		return err
	}

	raw := cfg.RawV1Alpha1()
	if raw == nil || raw.MachineConfig == nil {
		return nil
	}

	// The real check reads the images from the KubeletSpec and the control
	// plane component configs, which the lab derives from the machine config.
	components := []struct{ name, image string }{{"kubelet", kubeletImage(raw)}}

	if raw.ClusterConfig != nil && raw.Machine().Type().IsControlPlane() {
		components = append(components,
			struct{ name, image string }{"kube-apiserver", controlPlaneImages(raw)[0]},
			struct{ name, image string }{"kube-scheduler", controlPlaneImages(raw)[2]},
			struct{ name, image string }{"kube-controller-manager", controlPlaneImages(raw)[1]},
		)
	}

	for _, c := range components {
		k8s, err := compatibility.KubernetesVersionFromImageRef(c.image)
		if err != nil {
			return fmt.Errorf("error parsing %s version: %w", c.name, err)
		}

		if err := k8s.SupportedWith(installerVersion); err != nil {
			return fmt.Errorf("component %s version issue: %w", c.name, err)
		}
	}

	return nil
}

// stagedPreflight runs the pre-flight for an upgrade staged on a node whose
// installed state is ps.
func stagedPreflight(ps *persistState, installer string) error {
	cfg, err := loadConfig(ps.config)
	if err != nil {
		return fmt.Errorf("error loading the machine config: %w", err)
	}

	return upgradePreflight(ps.image.Version, installer, cfg)
}
