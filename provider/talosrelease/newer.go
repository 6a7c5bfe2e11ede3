package talosrelease

import (
	"slices"

	"github.com/blang/semver/v4"
)

// Release is a Talos minor newer than the pinned machinery: its rules and
// the Kubernetes version its configurations default to.
type Release struct {
	Rules
	// DefaultKubernetes is constants.DefaultKubernetesVersion of the tag.
	DefaultKubernetes string
	// Tag is the siderolabs/talos tag the row was read from.
	Tag string
	// Documents are the configuration document kinds the release's decoder
	// knows and the pinned machinery's does not: the kinds passed to
	// registry.Register under pkg/machinery/config/types at Tag.
	Documents []string
}

// newerReleases are the Talos minors newer than the pinned machinery
// (v1.13.9). The root module cannot take machinery v1.14.x yet: it needs
// github.com/cosi-project/runtime v1.16.3 and github.com/jsimonetti/
// rtnetlink/v2 v2.2.1-0.20260802200809-43bafec815b3, which the Go module
// proxy here does not serve, and the root module may not replace them (it
// must stay `go install`able). When they are served, bump machinery and
// drop the row: talos114 then comes from machinery like the others.
// TestNewerReleasesMatchTheirTag pins each row to the files it cites.
var newerReleases = map[uint64]Release{
	// siderolabs/talos v1.14.1 pkg/machinery/compatibility/talos114/talos114.go
	// and pkg/machinery/constants/constants.go (DefaultKubernetesVersion).
	14: {
		Tag: "v1.14.1",
		Rules: Rules{
			MinHostUpgrade:   semver.MustParse("1.12.0"),
			MaxHostDowngrade: semver.MustParse("1.16.0"),
			MinKubernetes:    semver.MustParse("1.32.0"),
			MaxKubernetes:    semver.MustParse("1.37.99"),
		},
		DefaultKubernetes: "1.37.0",
		Documents: []string{
			"BGPInstanceConfig", "CRIBaseRuntimeSpecConfig", "CRICustomizationConfig", "ContainerConfig",
			"DiscoveryIdentityConfig", "DiscoveryServiceConfig", "EtcFileConfig", "FilesystemScrubConfig",
			"FilesystemTrimConfig", "HTTPProbeConfig", "ImageCacheConfig", "KernelModuleConfig",
			"KubeAPIServerCAConfig", "KubeAPIServerConfig", "KubeAdmissionControlConfig",
			"KubeAggregatorCAConfig", "KubeAuditPolicyConfig", "KubeAuthenticationConfig",
			"KubeAuthorizerConfig", "KubeClusterConfig", "KubeControllerManagerConfig", "KubeCoreDNSConfig",
			"KubeCredentialProviderConfig", "KubeEtcdEncryptionConfig", "KubeExternalManifestConfig",
			"KubeFlannelCNIConfig", "KubeInlineManifestConfig", "KubeNetworkConfig", "KubeNodeConfig",
			"KubePrismConfig", "KubeProxyConfig", "KubeSchedulerConfig", "KubeServiceAccountConfig",
			"KubeStaticPodConfig", "KubeTalosAPIAccessConfig", "KubeletConfig", "LVMLogicalVolumeConfig",
			"LVMVolumeGroupConfig", "RAIDArrayConfig", "SecurityProfileConfig", "SysctlConfig",
			"SysfsConfig", "UdevRulesConfig", "UnattendedInstallConfig", "VethConfig",
		},
	},
}

// NewerDefaultKubernetes is the default Kubernetes version of a Talos minor
// newer than the pinned machinery ("" for others).
func NewerDefaultKubernetes(minor uint64) string {
	return newerReleases[minor].DefaultKubernetes
}

// NewerTag is the tag a Talos minor newer than the pinned machinery was
// tabled from: its newest patch known here ("" for others).
func NewerTag(minor uint64) string {
	return newerReleases[minor].Tag
}

// DocumentRelease is the Talos minor newer than the pinned machinery that
// introduced a configuration document kind (false for kinds it knows or
// no release here knows).
func DocumentRelease(kind string) (uint64, bool) {
	for minor, r := range newerReleases {
		if slices.Contains(r.Documents, kind) {
			return minor, true
		}
	}
	return 0, false
}
