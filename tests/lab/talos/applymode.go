package talos

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configdiff"
	"github.com/siderolabs/talos/pkg/machinery/config/container"
)

// canApplyImmediate decides whether a new config can be applied without a
// reboot, with the rule of Talos 1.12 (siderolabs/talos
// internal/app/machined/pkg/runtime/v1alpha1/v1alpha1_runtime.go,
// Runtime.CanApplyImmediate): only the v1alpha1 document is compared (other
// documents always apply live), and within it only these parts may change:
// .debug, .cluster, and under .machine: ca, acceptedCAs, time, certSANs,
// install, network, sysfs, sysctls, logging, controlPlane, kubelet, kernel,
// registries, pods, seccompProfiles, nodeAnnotations, nodeLabels, nodeTaints,
// and features.{kubernetesTalosAPIAccess, kubePrism, hostDNS, imageCache,
// nodeAddressSortAlgorithm}. Anything else (e.g. machine.type, machine.token,
// machine.files, machine.env, machine.disks) needs a reboot. The error text is
// the one Talos returns, with machinery's diff.
func canApplyImmediate(current, next config.Provider) error {
	if current == nil {
		return errors.New("no current config")
	}

	cur := current.RawV1Alpha1()
	if cur == nil {
		return errors.New("current config is not v1alpha1")
	}

	nxt := next.RawV1Alpha1()
	if nxt == nil {
		return errors.New("new config is not v1alpha1")
	}

	// Overwrite the live-changeable parts of a copy of the new config with
	// the current values: whatever differs afterwards needs a reboot.
	nxt = nxt.DeepCopy()
	nxt.ConfigDebug = cur.ConfigDebug
	nxt.ClusterConfig = cur.ClusterConfig

	if nm, cm := nxt.MachineConfig, cur.MachineConfig; nm != nil && cm != nil {
		nm.MachineCA = cm.MachineCA
		nm.MachineAcceptedCAs = cm.MachineAcceptedCAs
		nm.MachineTime = cm.MachineTime //nolint:staticcheck // deprecated field, still compared by Talos
		nm.MachineCertSANs = cm.MachineCertSANs
		nm.MachineInstall = cm.MachineInstall
		nm.MachineNetwork = cm.MachineNetwork
		nm.MachineSysfs = cm.MachineSysfs
		nm.MachineSysctls = cm.MachineSysctls
		nm.MachineLogging = cm.MachineLogging
		nm.MachineControlPlane = cm.MachineControlPlane
		nm.MachineKubelet = cm.MachineKubelet
		nm.MachineKernel = cm.MachineKernel
		nm.MachineRegistries = cm.MachineRegistries //nolint:staticcheck // deprecated field, still compared by Talos
		nm.MachinePods = cm.MachinePods
		nm.MachineSeccompProfiles = cm.MachineSeccompProfiles
		nm.MachineNodeAnnotations = cm.MachineNodeAnnotations
		nm.MachineNodeLabels = cm.MachineNodeLabels
		nm.MachineNodeTaints = cm.MachineNodeTaints

		if nf, cf := nm.MachineFeatures, cm.MachineFeatures; nf != nil && cf != nil {
			nf.KubernetesTalosAPIAccessConfig = cf.KubernetesTalosAPIAccessConfig
			nf.KubePrismSupport = cf.KubePrismSupport
			nf.HostDNSSupport = cf.HostDNSSupport
			nf.ImageCacheSupport = cf.ImageCacheSupport
			nf.FeatureNodeAddressSortAlgorithm = cf.FeatureNodeAddressSortAlgorithm
		}
	}

	if reflect.DeepEqual(cur, nxt) {
		return nil
	}

	diff, err := configdiff.DiffConfigs(container.NewV1Alpha1(cur), container.NewV1Alpha1(nxt))
	if err != nil {
		return fmt.Errorf("error calculating diff: %w", err)
	}

	return fmt.Errorf("this config change can't be applied in immediate mode\ndiff:\n%s", diff)
}
