package talos

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/blang/semver/v4"
	"gopkg.in/yaml.v3"
)

// A node's config decoder knows only the documents and fields of the Talos
// release it runs: an older node refuses newer ones when it decodes the
// config (pkg/machinery/config/configloader/internal/decoder/decoder.go:
// registry.New fails with `"<kind>" "<apiVersion>": not registered`, and
// xyaml.CheckUnknownKeys with "unknown keys found during decoding:").
// The lab itself decodes with machinery v1.14.1, so these tables say what
// appeared after v1.8.0 (the oldest release the lab models). They were
// derived from siderolabs/talos tags v1.8.0 .. v1.14.1: the kinds passed to
// registry.Register under pkg/machinery/config/types, and the yaml tags of
// the config types that changed between releases. Fields added to older
// documents in 1.13 and 1.14 are not listed yet (see the README).

// oldestModelled is the oldest Talos whose config decoder the tables cover.
var oldestModelled = semver.MustParse("1.8.0")

// documentSince: document kinds registered after v1.8.0, by first release.
var documentSince = map[string]semver.Version{
	// v1.10.0
	"EthernetConfig":        semver.MustParse("1.10.0"),
	"PCIDriverRebindConfig": semver.MustParse("1.10.0"),
	"UserVolumeConfig":      semver.MustParse("1.10.0"),
	// v1.11.0
	"ExistingVolumeConfig": semver.MustParse("1.11.0"),
	"RawVolumeConfig":      semver.MustParse("1.11.0"),
	"SwapVolumeConfig":     semver.MustParse("1.11.0"),
	"ZswapConfig":          semver.MustParse("1.11.0"),
	// v1.12.0
	"BondConfig":           semver.MustParse("1.12.0"),
	"BridgeConfig":         semver.MustParse("1.12.0"),
	"DHCPv4Config":         semver.MustParse("1.12.0"),
	"DHCPv6Config":         semver.MustParse("1.12.0"),
	"DummyLinkConfig":      semver.MustParse("1.12.0"),
	"HCloudVIPConfig":      semver.MustParse("1.12.0"),
	"HostnameConfig":       semver.MustParse("1.12.0"),
	"Layer2VIPConfig":      semver.MustParse("1.12.0"),
	"LinkAliasConfig":      semver.MustParse("1.12.0"),
	"LinkConfig":           semver.MustParse("1.12.0"),
	"OOMConfig":            semver.MustParse("1.12.0"),
	"RegistryAuthConfig":   semver.MustParse("1.12.0"),
	"RegistryMirrorConfig": semver.MustParse("1.12.0"),
	"RegistryTLSConfig":    semver.MustParse("1.12.0"),
	"ResolverConfig":       semver.MustParse("1.12.0"),
	"StaticHostConfig":     semver.MustParse("1.12.0"),
	"TimeSyncConfig":       semver.MustParse("1.12.0"),
	"VLANConfig":           semver.MustParse("1.12.0"),
	"WireguardConfig":      semver.MustParse("1.12.0"),
	// v1.13.0 (the kinds registered at v1.13.0 and v1.13.8 are the same)
	"BlackholeRouteConfig":    semver.MustParse("1.13.0"),
	"EnvironmentConfig":       semver.MustParse("1.13.0"),
	"ExternalVolumeConfig":    semver.MustParse("1.13.0"),
	"ImageVerificationConfig": semver.MustParse("1.13.0"),
	"KubeSpanConfig":          semver.MustParse("1.13.0"),
	"RoutingRuleConfig":       semver.MustParse("1.13.0"),
	"TCPProbeConfig":          semver.MustParse("1.13.0"),
	"VRFConfig":               semver.MustParse("1.13.0"),
	// v1.14.0 (read at v1.14.1; v1.14.0 is not on the module proxy)
	"BGPInstanceConfig":            semver.MustParse("1.14.0"),
	"CRIBaseRuntimeSpecConfig":     semver.MustParse("1.14.0"),
	"CRICustomizationConfig":       semver.MustParse("1.14.0"),
	"ContainerConfig":              semver.MustParse("1.14.0"),
	"DiscoveryIdentityConfig":      semver.MustParse("1.14.0"),
	"DiscoveryServiceConfig":       semver.MustParse("1.14.0"),
	"EtcFileConfig":                semver.MustParse("1.14.0"),
	"FilesystemScrubConfig":        semver.MustParse("1.14.0"),
	"FilesystemTrimConfig":         semver.MustParse("1.14.0"),
	"HTTPProbeConfig":              semver.MustParse("1.14.0"),
	"ImageCacheConfig":             semver.MustParse("1.14.0"),
	"KernelModuleConfig":           semver.MustParse("1.14.0"),
	"KubeAPIServerCAConfig":        semver.MustParse("1.14.0"),
	"KubeAPIServerConfig":          semver.MustParse("1.14.0"),
	"KubeAdmissionControlConfig":   semver.MustParse("1.14.0"),
	"KubeAggregatorCAConfig":       semver.MustParse("1.14.0"),
	"KubeAuditPolicyConfig":        semver.MustParse("1.14.0"),
	"KubeAuthenticationConfig":     semver.MustParse("1.14.0"),
	"KubeAuthorizerConfig":         semver.MustParse("1.14.0"),
	"KubeClusterConfig":            semver.MustParse("1.14.0"),
	"KubeControllerManagerConfig":  semver.MustParse("1.14.0"),
	"KubeCoreDNSConfig":            semver.MustParse("1.14.0"),
	"KubeCredentialProviderConfig": semver.MustParse("1.14.0"),
	"KubeEtcdEncryptionConfig":     semver.MustParse("1.14.0"),
	"KubeExternalManifestConfig":   semver.MustParse("1.14.0"),
	"KubeFlannelCNIConfig":         semver.MustParse("1.14.0"),
	"KubeInlineManifestConfig":     semver.MustParse("1.14.0"),
	"KubeNetworkConfig":            semver.MustParse("1.14.0"),
	"KubeNodeConfig":               semver.MustParse("1.14.0"),
	"KubePrismConfig":              semver.MustParse("1.14.0"),
	"KubeProxyConfig":              semver.MustParse("1.14.0"),
	"KubeSchedulerConfig":          semver.MustParse("1.14.0"),
	"KubeServiceAccountConfig":     semver.MustParse("1.14.0"),
	"KubeStaticPodConfig":          semver.MustParse("1.14.0"),
	"KubeTalosAPIAccessConfig":     semver.MustParse("1.14.0"),
	"KubeletConfig":                semver.MustParse("1.14.0"),
	"LVMLogicalVolumeConfig":       semver.MustParse("1.14.0"),
	"LVMVolumeGroupConfig":         semver.MustParse("1.14.0"),
	"RAIDArrayConfig":              semver.MustParse("1.14.0"),
	"SecurityProfileConfig":        semver.MustParse("1.14.0"),
	"SysctlConfig":                 semver.MustParse("1.14.0"),
	"SysfsConfig":                  semver.MustParse("1.14.0"),
	"UdevRulesConfig":              semver.MustParse("1.14.0"),
	"UnattendedInstallConfig":      semver.MustParse("1.14.0"),
	"VethConfig":                   semver.MustParse("1.14.0"),
}

// fieldSince: fields added after v1.8.0 to documents that existed before.
// A path is YAML keys; "[]" is every element of a list, "*" any map key.
var fieldSince = []struct {
	kind  string
	path  string
	since semver.Version
}{
	{"v1alpha1", "cluster.apiServer.authorizationConfig", semver.MustParse("1.9.0")},
	{"v1alpha1", "machine.baseRuntimeSpecOverrides", semver.MustParse("1.9.0")},
	{"v1alpha1", "machine.features.imageCache", semver.MustParse("1.9.0")},
	{"v1alpha1", "machine.features.nodeAddressSortAlgorithm", semver.MustParse("1.9.0")},
	{"v1alpha1", "machine.network.interfaces.[].bond.deviceSelectors.[].permanentAddr", semver.MustParse("1.9.0")},
	{"v1alpha1", "machine.network.interfaces.[].bridgePort", semver.MustParse("1.9.0")},
	{"v1alpha1", "machine.network.interfaces.[].deviceSelector.permanentAddr", semver.MustParse("1.9.0")},
	{"v1alpha1", "machine.network.searchDomains", semver.MustParse("1.9.0")},
	{"v1alpha1", "machine.registries.mirrors.*.skipFallback", semver.MustParse("1.9.0")},
	{"SideroLinkConfig", "uniqueToken", semver.MustParse("1.10.0")},
	{"VolumeConfig", "encryption", semver.MustParse("1.11.0")},
	{"UserVolumeConfig", "encryption.keys.[].lockToState", semver.MustParse("1.11.0")},
	{"UserVolumeConfig", "filesystem.projectQuotaSupport", semver.MustParse("1.11.0")},
	{"v1alpha1", "machine.install.grubUseUKICmdline", semver.MustParse("1.12.0")},
	{"UserVolumeConfig", "volumeType", semver.MustParse("1.12.0")},
	{"EthernetConfig", "wakeOnLan", semver.MustParse("1.12.0")},
	{"VolumeConfig", "encryption.keys.[].tpm.options.pcrs", semver.MustParse("1.12.0")},
	{"UserVolumeConfig", "encryption.keys.[].tpm.options.pcrs", semver.MustParse("1.12.0")},
	{"RawVolumeConfig", "encryption.keys.[].tpm.options.pcrs", semver.MustParse("1.12.0")},
	{"SwapVolumeConfig", "encryption.keys.[].tpm.options.pcrs", semver.MustParse("1.12.0")},
	// Backported to v1.12.4 (absent from v1.12.3).
	{"v1alpha1", "machine.network.kubespan.filters.excludeAdvertisedNetworks", semver.MustParse("1.12.4")},
}

// decodeErrorWrapped: from v1.12.3 the decoder prefixes a document's error
// with "error decoding document <apiVersion>/<kind>/<name> (line N): ".
var decodeErrorWrapped = semver.MustParse("1.12.3")

// checkConfigKnown refuses a config that the decoder of Talos `running`
// does not know, with that decoder's wording. Malformed YAML passes: the
// lab's machinery loader reports it right after.
func checkConfigKnown(data []byte, running string) error {
	v, err := semver.ParseTolerant(running)
	if err != nil {
		return fmt.Errorf("simulator: node version %q: %w", running, err)
	}

	v.Pre, v.Build = nil, nil

	if v.LT(oldestModelled) {
		return fmt.Errorf("simulator: the config decoder of Talos %s (older than v%s) is not modelled", running, oldestModelled)
	}

	dec := yaml.NewDecoder(bytes.NewReader(data))

	for {
		var doc yaml.Node

		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}

			return nil //nolint:nilerr // malformed: machinery's loader says why
		}

		if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			continue
		}

		if err := checkDocumentKnown(doc.Content[0], v); err != nil {
			return err
		}
	}
}

func checkDocumentKnown(m *yaml.Node, running semver.Version) error {
	apiVersion, kind, name := mapValue(m, "apiVersion"), mapValue(m, "kind"), mapValue(m, "name")

	wrap := func(err error) error {
		if running.LT(decodeErrorWrapped) {
			return err
		}

		return fmt.Errorf("error decoding document %s/%s/%s (line %d): %w", apiVersion, cmp.Or(kind, "v1alpha1"), name, m.Line, err)
	}

	if kind == "" {
		kind = "v1alpha1"
	}

	if since, ok := documentSince[kind]; ok && running.LT(since) {
		return wrap(fmt.Errorf("%q %q: not registered", kind, apiVersion))
	}

	var paths [][]string

	for _, f := range fieldSince {
		if f.kind == kind && running.LT(f.since) {
			paths = append(paths, strings.Split(f.path, "."))
		}
	}

	unknown := unknownKeys(m, paths)
	if unknown == nil {
		return nil
	}

	out, err := yaml.Marshal(unknown)
	if err != nil {
		return fmt.Errorf("failed to marshal error summary %w", err)
	}

	return wrap(fmt.Errorf("unknown keys found during decoding:\n%s", out))
}

// unknownKeys is the part of n found at any of paths, shaped as xyaml's
// summary: maps keep the keys leading to an unknown key, lists keep only
// the elements that hold one, the unknown key keeps its whole value.
func unknownKeys(n *yaml.Node, paths [][]string) any {
	if len(paths) == 0 {
		return nil
	}

	switch n.Kind { //nolint:exhaustive // scalars hold no keys
	case yaml.MappingNode:
		var out map[string]any

		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i].Value, n.Content[i+1]

			var (
				rest [][]string
				leaf bool
			)

			for _, p := range paths {
				if p[0] != key && p[0] != "*" {
					continue
				}

				if len(p) == 1 {
					leaf = true
				} else {
					rest = append(rest, p[1:])
				}
			}

			var found any
			if leaf {
				found = val
			} else {
				found = unknownKeys(val, rest)
			}

			if found != nil {
				if out == nil {
					out = map[string]any{}
				}

				out[key] = found
			}
		}

		if out == nil {
			return nil
		}

		return out
	case yaml.SequenceNode:
		var rest [][]string

		for _, p := range paths {
			if p[0] == "[]" && len(p) > 1 {
				rest = append(rest, p[1:])
			}
		}

		var out []any

		for _, el := range n.Content {
			if found := unknownKeys(el, rest); found != nil {
				out = append(out, found)
			}
		}

		if out == nil {
			return nil
		}

		return out
	}

	return nil
}

// mapValue is the scalar value of key in a mapping ("" if absent).
func mapValue(m *yaml.Node, key string) string {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key && m.Content[i+1].Kind == yaml.ScalarNode {
			return m.Content[i+1].Value
		}
	}

	return ""
}
