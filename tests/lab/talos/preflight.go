package talos

import (
	"fmt"

	"github.com/blang/semver/v4"
	"github.com/siderolabs/talos/pkg/machinery/config"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosrelease"
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
	hostVersion, err := semver.ParseTolerant(host)
	if err != nil {
		return fmt.Errorf("error parsing host Talos version: %w", err)
	}

	installerVersion, err := semver.ParseTolerant(installer)
	if err != nil {
		return fmt.Errorf("error parsing installer Talos version: %w", err)
	}

	// machinery's UpgradeableFrom and SupportedWith over talosrelease's
	// rules (the pinned machinery v1.13.9 does not know Talos 1.14).
	if err := talosrelease.UpgradeableFrom(installerVersion, hostVersion); err != nil {
		return err
	}

	raw := cfg.RawV1Alpha1()
	if raw == nil || raw.MachineConfig == nil {
		return nil
	}

	// The real check reads the images from the KubeletSpec and the control
	// plane component configs, which the lab derives from the machine config.
	components := []struct{ name, image string }{{"kubelet", raw.Machine().Kubelet().Image()}}

	if raw.ClusterConfig != nil && raw.Machine().Type().IsControlPlane() {
		components = append(components,
			struct{ name, image string }{"kube-apiserver", raw.Cluster().APIServer().Image()},
			struct{ name, image string }{"kube-scheduler", raw.Cluster().Scheduler().Image()},
			struct{ name, image string }{"kube-controller-manager", raw.Cluster().ControllerManager().Image()},
		)
	}

	for _, c := range components {
		k8s, err := talosrelease.KubernetesFromImage(c.image)
		if err != nil {
			return fmt.Errorf("error parsing %s version: %w", c.name, err)
		}

		if err := talosrelease.KubernetesSupported(installerVersion, k8s); err != nil {
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
