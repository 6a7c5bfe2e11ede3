package plan

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"
	"gopkg.in/yaml.v3"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// GenerateInput is what talosconfig.Generate needs for one node: the plan's
// cluster and node inputs, the provider's own patch and the user's patches.
// talosVersion is the version the node runs (the configuration's version
// contract must not be newer); "" means the plan's version.
func (p *Plan) GenerateInput(n *Node, bundle *secrets.Bundle, talosVersion string) (talosconfig.Input, error) {
	talosVersion = orDefault(talosVersion, p.Cluster.TalosVersion)
	patches, err := p.MachineConfigPatches(n, talosVersion)
	if err != nil {
		return talosconfig.Input{}, err
	}
	texts, sources := make([]string, len(patches)), make([]string, len(patches))
	for i, pt := range patches {
		texts[i] = pt.Content
		sources[i] = pt.Source
		if pt.Source == "provider" {
			sources[i] = "the settings the component derives from its inputs"
		}
	}
	mode := talosconfig.Metal // an ISO-booted node installs itself to disk
	if n.VM.Boot.CloneVMID != 0 {
		mode = talosconfig.Cloud // a cloned disk image is installed already
	}
	return talosconfig.Input{
		ClusterName:       p.Cluster.Name,
		Endpoint:          p.Cluster.Endpoint,
		Role:              talosconfig.Role(n.Role),
		Secrets:           bundle,
		TalosVersion:      talosVersion,
		KubernetesVersion: p.Cluster.KubernetesVersion,
		InstallDisk:       n.Config.InstallDisk,
		InstallImage:      p.Cluster.Image.Installer,
		SANs:              p.Cluster.CertSANs,
		Patches:           texts,
		PatchSources:      sources,
		Mode:              mode,
	}, nil
}

// MachineConfigPatches lists, in apply order, the patches that turn
// talosconfig's generated base configuration into this node's: the
// provider's own patch (Source "provider"), rendering what the spec asks
// for, then the user's patches (cluster, role, pool, node). Documents are
// chosen for the Talos version: 1.12 configurations are multi-document
// (HostnameConfig, LinkAliasConfig, Layer2VIPConfig), older ones keep
// hostname and VIP under machine.network.
func (p *Plan) MachineConfigPatches(n *Node, talosVersion string) ([]Patch, error) {
	v, err := talosconfig.ParseVersion(orDefault(talosVersion, p.Cluster.TalosVersion))
	if err != nil {
		return nil, err
	}
	docs, err := p.providerDocuments(n, v)
	if err != nil {
		return nil, err
	}
	out := []Patch{{Source: "provider", Content: strings.Join(docs, "---\n")}}
	out = append(out, p.Cluster.Patches...)
	out = append(out, n.Config.Patches...)
	return out, nil
}

// multiDoc reports whether a Talos version's configuration carries network
// settings as documents (machinery contract MultidocNetworkConfigSupported:
// newer than 1.11).
func multiDoc(v semver.Version) bool { return v.Major > 1 || v.Minor > 11 }

// userVolumes reports whether Talos knows UserVolumeConfig (Talos 1.10).
func userVolumes(v semver.Version) bool { return v.Major > 1 || v.Minor >= 10 }

// providerDocuments are the configuration documents the provider adds to a
// node's generated configuration, rendered: one v1alpha1 patch (machine and
// cluster settings), then, for multi-document Talos versions, the hostname
// and VIP documents, then one UserVolumeConfig per data volume.
func (p *Plan) providerDocuments(n *Node, v semver.Version) ([]string, error) {
	nc := &n.Config
	if len(nc.Volumes) > 0 && !userVolumes(v) {
		return nil, fmt.Errorf("node %s: data disk volumes need Talos v1.10 or newer (UserVolumeConfig); the node runs v%s", n.Name, v)
	}
	mac := strings.ToLower(n.VM.NICs[0].MAC)

	var parts []any
	m := machinePatchFor(&p.Cluster, nc, mac, v)
	cl := clusterPatchFor(&p.Cluster, n.Role == RoleControlPlane)
	if v1 := (v1alpha1Patch{}); !m.empty() || !cl.empty() {
		if !m.empty() {
			v1.Machine = &m
		}
		if !cl.empty() {
			v1.Cluster = &cl
		}
		parts = append(parts, v1)
	}
	if multiDoc(v) {
		parts = append(parts, networkDocs(nc, mac)...)
	}
	parts = append(parts, volumeDocs(nc.Volumes)...)

	docs := make([]string, 0, len(parts))
	for _, part := range parts {
		b, err := yaml.Marshal(part)
		if err != nil {
			return nil, fmt.Errorf("rendering the provider's patch for node %s: %w", n.Name, err)
		}
		docs = append(docs, string(b))
	}
	return docs, nil
}

// machinePatchFor is the v1alpha1 machine section of a node's patch.
func machinePatchFor(c *ClusterConfig, nc *NodeConfig, mac string, v semver.Version) machinePatch {
	var m machinePatch
	if len(nc.KubeletExtraArgs) > 0 {
		m.Kubelet = &kubeletPatch{ExtraArgs: nc.KubeletExtraArgs}
	}
	if len(nc.NodeLabels) > 0 {
		m.NodeLabels = nc.NodeLabels
	}
	if len(nc.NodeTaints) > 0 {
		m.NodeTaints = nc.NodeTaints
	}
	if a := nc.TalosAPIAccess; a != nil {
		m.Features = &featuresPatch{KubernetesTalosAPIAccess: &talosAPIAccessPatch{
			Enabled: true, AllowedRoles: a.AllowedRoles, AllowedKubernetesNamespaces: a.AllowedKubernetesNamespaces,
		}}
	}
	m.Registries = registriesPatchFor(c.RegistryMirrors)
	if !multiDoc(v) {
		m.Network = &legacyNetworkPatch{Hostname: nc.Hostname}
		if nc.VIP != nil {
			m.Network.Interfaces = []legacyInterfacePatch{{
				DeviceSelector: deviceSelectorPatch{HardwareAddr: mac},
				VIP:            vipPatch{IP: nc.VIP.Address},
			}}
		}
	}
	return m
}

// registriesPatchFor is machine.registries for the cluster's mirrors; nil
// without mirrors.
func registriesPatchFor(mirrors []Mirror) *registriesPatch {
	if len(mirrors) == 0 {
		return nil
	}
	r := &registriesPatch{Mirrors: map[string]mirrorPatch{}}
	for _, mi := range mirrors {
		r.Mirrors[mi.Registry] = mirrorPatch{Endpoints: mi.Endpoints, OverridePath: mi.OverridePath, SkipFallback: mi.SkipFallback}
		a := mi.Auth
		if a == nil {
			continue
		}
		// Talos looks credentials up by the host it pulls from,
		// the endpoint's host[:port] (machine.registries.config).
		for _, e := range mi.Endpoints {
			if r.Config == nil {
				r.Config = map[string]registryConfigPatch{}
			}
			r.Config[endpointHost(e)] = registryConfigPatch{Auth: &registryAuthPatch{
				Username: a.Username, Password: a.Password, IdentityToken: a.IdentityToken,
			}}
		}
	}
	return r
}

// clusterPatchFor is the v1alpha1 cluster section of a node's patch; cp: the
// node is a control plane.
func clusterPatchFor(c *ClusterConfig, cp bool) clusterPatch {
	var cl clusterPatch
	if c.AllowSchedulingOnControlPlanes && cp {
		cl.AllowSchedulingOnControlPlanes = ptrTo(true)
	}
	if c.CNI.Name != "flannel" {
		cl.Network = &clusterNetworkPatch{CNI: cniPatch{Name: c.CNI.Name, URLs: c.CNI.URLs}}
	}
	if c.ProxyDisabled {
		cl.Proxy = &proxyPatch{Disabled: true}
	}
	if e := c.ExternalCloudProvider; e != nil {
		// enabled makes every kubelet run with an external cloud provider;
		// only control planes apply manifests.
		cl.ExternalCloudProvider = &externalCloudProviderPatch{Enabled: true}
		if cp {
			cl.ExternalCloudProvider.Manifests = e.Manifests
		}
	}
	if cp {
		cl.ExtraManifests = c.ExtraManifests
		for _, im := range c.InlineManifests {
			cl.InlineManifests = append(cl.InlineManifests, inlineManifestPatch(im))
		}
	}
	return cl
}

// networkDocs are the hostname and VIP documents of multi-document Talos
// versions.
func networkDocs(nc *NodeConfig, mac string) []any {
	docs := []any{hostnameDoc{docMeta: meta("HostnameConfig"), Auto: "off", Hostname: nc.Hostname}}
	if nc.VIP != nil {
		// The VIP's link is found by MAC (our NICs' MACs are fixed),
		// so the config does not depend on interface naming.
		alias := linkAliasDoc{docMeta: meta("LinkAliasConfig"), Name: vipLinkAlias}
		alias.Selector.Match = fmt.Sprintf("mac(link.permanent_addr) == %q", mac)
		docs = append(docs, alias, layer2VIPDoc{docMeta: meta("Layer2VIPConfig"), Name: nc.VIP.Address, Link: vipLinkAlias})
	}
	return docs
}

// volumeDocs are one UserVolumeConfig per data volume, on the disk the
// volume names, grown to fill it.
func volumeDocs(volumes []Volume) []any {
	var docs []any
	for _, vol := range volumes {
		doc := userVolumeDoc{docMeta: meta("UserVolumeConfig"), Name: vol.Name}
		doc.Provisioning.DiskSelector.Match = fmt.Sprintf("disk.dev_path == %q", vol.Device)
		doc.Provisioning.Grow = true
		doc.Provisioning.MinSize = "1GiB"
		docs = append(docs, doc)
	}
	return docs
}

// vipLinkAlias names the primary NIC for the VIP document.
const vipLinkAlias = "net0"

func ptrTo[T any](v T) *T { return &v }

func meta(kind string) docMeta { return docMeta{APIVersion: "v1alpha1", Kind: kind} }

// The structs below have the shape of the Talos documents they patch
// (machinery config/types/v1alpha1, network, block), in the field order a
// person reads them.

type v1alpha1Patch struct {
	Machine *machinePatch `yaml:"machine,omitempty"`
	Cluster *clusterPatch `yaml:"cluster,omitempty"`
}

type machinePatch struct {
	Network    *legacyNetworkPatch `yaml:"network,omitempty"`
	Kubelet    *kubeletPatch       `yaml:"kubelet,omitempty"`
	NodeLabels map[string]string   `yaml:"nodeLabels,omitempty"`
	NodeTaints map[string]string   `yaml:"nodeTaints,omitempty"`
	Features   *featuresPatch      `yaml:"features,omitempty"`
	Registries *registriesPatch    `yaml:"registries,omitempty"`
}

func (m *machinePatch) empty() bool {
	return m.Network == nil && m.Kubelet == nil && m.NodeLabels == nil && m.NodeTaints == nil && m.Features == nil && m.Registries == nil
}

type legacyNetworkPatch struct {
	Hostname   string                 `yaml:"hostname,omitempty"`
	Interfaces []legacyInterfacePatch `yaml:"interfaces,omitempty"`
}

type legacyInterfacePatch struct {
	DeviceSelector deviceSelectorPatch `yaml:"deviceSelector"`
	VIP            vipPatch            `yaml:"vip"`
}

type deviceSelectorPatch struct {
	HardwareAddr string `yaml:"hardwareAddr"`
}

type vipPatch struct {
	IP string `yaml:"ip"`
}

type kubeletPatch struct {
	ExtraArgs map[string]string `yaml:"extraArgs"`
}

type featuresPatch struct {
	KubernetesTalosAPIAccess *talosAPIAccessPatch `yaml:"kubernetesTalosAPIAccess,omitempty"`
}

type talosAPIAccessPatch struct {
	Enabled                     bool     `yaml:"enabled"`
	AllowedRoles                []string `yaml:"allowedRoles"`
	AllowedKubernetesNamespaces []string `yaml:"allowedKubernetesNamespaces"`
}

type registriesPatch struct {
	Mirrors map[string]mirrorPatch         `yaml:"mirrors"`
	Config  map[string]registryConfigPatch `yaml:"config,omitempty"`
}

type registryConfigPatch struct {
	Auth *registryAuthPatch `yaml:"auth,omitempty"`
}

type registryAuthPatch struct {
	Username      string `yaml:"username,omitempty"`
	Password      string `yaml:"password,omitempty"`
	IdentityToken string `yaml:"identityToken,omitempty"`
}

// endpointHost is the host[:port] of a mirror URL ("" parts kept as they
// are: the URL was checked by checkURLs).
func endpointHost(endpoint string) string {
	if u, err := url.Parse(endpoint); err == nil && u.Host != "" {
		return u.Host
	}
	return endpoint
}

type mirrorPatch struct {
	Endpoints    []string `yaml:"endpoints"`
	OverridePath bool     `yaml:"overridePath,omitempty"`
	SkipFallback bool     `yaml:"skipFallback,omitempty"`
}

type clusterPatch struct {
	AllowSchedulingOnControlPlanes *bool                       `yaml:"allowSchedulingOnControlPlanes,omitempty"`
	Network                        *clusterNetworkPatch        `yaml:"network,omitempty"`
	Proxy                          *proxyPatch                 `yaml:"proxy,omitempty"`
	ExternalCloudProvider          *externalCloudProviderPatch `yaml:"externalCloudProvider,omitempty"`
	ExtraManifests                 []string                    `yaml:"extraManifests,omitempty"`
	InlineManifests                []inlineManifestPatch       `yaml:"inlineManifests,omitempty"`
}

func (c *clusterPatch) empty() bool {
	return c.AllowSchedulingOnControlPlanes == nil && c.Network == nil && c.Proxy == nil &&
		c.ExternalCloudProvider == nil && c.ExtraManifests == nil && c.InlineManifests == nil
}

type clusterNetworkPatch struct {
	CNI cniPatch `yaml:"cni"`
}

type cniPatch struct {
	Name string   `yaml:"name"`
	URLs []string `yaml:"urls,omitempty"`
}

type proxyPatch struct {
	Disabled bool `yaml:"disabled"`
}

type externalCloudProviderPatch struct {
	Enabled   bool     `yaml:"enabled"`
	Manifests []string `yaml:"manifests,omitempty"`
}

type inlineManifestPatch struct {
	Name     string `yaml:"name"`
	Contents string `yaml:"contents"`
}

type docMeta struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
}

type hostnameDoc struct {
	docMeta  `yaml:",inline"`
	Auto     string `yaml:"auto"`
	Hostname string `yaml:"hostname"`
}

type linkAliasDoc struct {
	docMeta  `yaml:",inline"`
	Name     string `yaml:"name"`
	Selector struct {
		Match string `yaml:"match"`
	} `yaml:"selector"`
}

type layer2VIPDoc struct {
	docMeta `yaml:",inline"`
	Name    string `yaml:"name"`
	Link    string `yaml:"link"`
}

type userVolumeDoc struct {
	docMeta      `yaml:",inline"`
	Name         string `yaml:"name"`
	Provisioning struct {
		DiskSelector struct {
			Match string `yaml:"match"`
		} `yaml:"diskSelector"`
		Grow    bool   `yaml:"grow"`
		MinSize string `yaml:"minSize"`
	} `yaml:"provisioning"`
}
