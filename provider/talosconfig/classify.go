package talosconfig

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/types/v1alpha1"
)

// Change is what applying a new configuration to a node running the old one
// does.
type Change struct {
	// Changed lists the configuration paths that differ (see ChangedPaths).
	Changed []string
	// Reboot is true when Talos's AUTO apply mode reboots the node for this
	// change; RebootPaths are the changed paths that force it.
	Reboot      bool
	RebootPaths []string
	// Upgrade is true when machine.install.image changes: applying the
	// configuration alone does not install it, the node needs the Upgrade
	// API with the new image (OldImage → NewImage).
	Upgrade  bool
	OldImage string
	NewImage string
}

// ClassifyChange compares two configurations of one node. The reboot rule is
// Talos's own for ApplyConfiguration in AUTO mode (siderolabs/talos v1.12.5
// internal/app/machined/internal/server/v1alpha1/v1alpha1_server.go calls
// Runtime.CanApplyImmediate, internal/app/machined/pkg/runtime/v1alpha1/
// v1alpha1_runtime.go; unchanged since v1.9): only the v1alpha1 document is
// compared, a fixed set of fields is live-applicable, any other difference
// reboots. Documents other than v1alpha1 (HostnameConfig, LinkConfig,
// Layer2VIPConfig, ...) are always applied without a reboot.
func ClassifyChange(oldYAML, newYAML string) (Change, error) {
	changes, err := diffConfigs(oldYAML, newYAML)
	if err != nil {
		return Change{}, err
	}
	oldCfg, err := configloader.NewFromBytes([]byte(oldYAML))
	if err != nil {
		return Change{}, fmt.Errorf("current configuration does not parse: %s", scrubDecodeError(err))
	}
	newCfg, err := configloader.NewFromBytes([]byte(newYAML))
	if err != nil {
		return Change{}, fmt.Errorf("new configuration does not parse: %s", scrubDecodeError(err))
	}
	current, next := oldCfg.RawV1Alpha1(), newCfg.RawV1Alpha1()
	if current == nil || next == nil {
		return Change{}, fmt.Errorf("both configurations need a v1alpha1 document (a Talos node refuses one without it)")
	}
	ch := Change{}
	for _, c := range changes {
		ch.Changed = append(ch.Changed, c.path)
	}
	ch.OldImage, ch.NewImage = installImage(current), installImage(next)
	ch.Upgrade = ch.OldImage != ch.NewImage
	if !canApplyImmediate(current, next) {
		ch.Reboot = true
		for _, c := range changes {
			if c.doc == "" && !liveApplicable(c.path) {
				ch.RebootPaths = append(ch.RebootPaths, c.path)
			}
		}
		if len(ch.RebootPaths) == 0 {
			// e.g. the features section appeared or vanished as a whole
			ch.RebootPaths = []string{"machine.features"}
		}
	}
	return ch, nil
}

// canApplyImmediate mirrors Runtime.CanApplyImmediate: copy the live-applicable
// fields of the current config onto a copy of the new one; anything still
// different needs a reboot.
func canApplyImmediate(current, next *v1alpha1.Config) bool {
	n := next.DeepCopy()
	n.ConfigDebug = current.ConfigDebug
	n.ClusterConfig = current.ClusterConfig
	if n.MachineConfig != nil && current.MachineConfig != nil {
		m, c := n.MachineConfig, current.MachineConfig
		m.MachineCA = c.MachineCA
		m.MachineAcceptedCAs = c.MachineAcceptedCAs
		m.MachineTime = c.MachineTime //nolint:staticcheck // mirrors Talos
		m.MachineCertSANs = c.MachineCertSANs
		m.MachineInstall = c.MachineInstall
		m.MachineNetwork = c.MachineNetwork
		m.MachineSysfs = c.MachineSysfs
		m.MachineSysctls = c.MachineSysctls
		m.MachineLogging = c.MachineLogging
		m.MachineControlPlane = c.MachineControlPlane
		m.MachineKubelet = c.MachineKubelet
		m.MachineKernel = c.MachineKernel
		m.MachineRegistries = c.MachineRegistries //nolint:staticcheck // mirrors Talos
		m.MachinePods = c.MachinePods
		m.MachineSeccompProfiles = c.MachineSeccompProfiles
		m.MachineNodeAnnotations = c.MachineNodeAnnotations
		m.MachineNodeLabels = c.MachineNodeLabels
		m.MachineNodeTaints = c.MachineNodeTaints
		if m.MachineFeatures != nil && c.MachineFeatures != nil {
			m.MachineFeatures.KubernetesTalosAPIAccessConfig = c.MachineFeatures.KubernetesTalosAPIAccessConfig
			m.MachineFeatures.KubePrismSupport = c.MachineFeatures.KubePrismSupport
			m.MachineFeatures.HostDNSSupport = c.MachineFeatures.HostDNSSupport
			m.MachineFeatures.ImageCacheSupport = c.MachineFeatures.ImageCacheSupport
			m.MachineFeatures.FeatureNodeAddressSortAlgorithm = c.MachineFeatures.FeatureNodeAddressSortAlgorithm
		}
	}
	return reflect.DeepEqual(current, n)
}

// liveApplicablePrefixes are the YAML paths of the fields canApplyImmediate
// copies, used to explain which changed paths force a reboot.
var liveApplicablePrefixes = []string{
	"debug", "cluster",
	"machine.ca", "machine.acceptedCAs", "machine.time", "machine.certSANs", "machine.install",
	"machine.network", "machine.sysfs", "machine.sysctls", "machine.logging", "machine.controlPlane",
	"machine.kubelet", "machine.kernel", "machine.registries", "machine.pods", "machine.seccompProfiles",
	"machine.nodeAnnotations", "machine.nodeLabels", "machine.nodeTaints",
	"machine.features.kubernetesTalosAPIAccess", "machine.features.kubePrism", "machine.features.hostDNS",
	"machine.features.imageCache", "machine.features.nodeAddressSortAlgorithm",
}

func liveApplicable(path string) bool {
	for _, prefix := range liveApplicablePrefixes {
		if path == prefix || strings.HasPrefix(path, prefix+".") || strings.HasPrefix(path, prefix+"[") {
			return true
		}
	}
	return false
}

func installImage(c *v1alpha1.Config) string {
	if c.MachineConfig == nil || c.MachineConfig.MachineInstall == nil {
		return ""
	}
	return c.MachineConfig.MachineInstall.InstallImage
}
