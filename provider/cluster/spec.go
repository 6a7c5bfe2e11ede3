package cluster

import (
	"github.com/proxmoxtalos/proxmoxtalos/provider/plan"
)

// tokenSecretPlaceholder stands in for the Proxmox CCM token secret while
// planning: the secret is an output, known only inside the apply that
// generates the machine configurations, and planning needs only to know
// that it is set.
const tokenSecretPlaceholder = "proxmox-ccm-token-secret-placeholder"

// toSpec converts the inputs to the plan's spec. tokenSecret is the
// Proxmox CCM token secret ("" when unset or not known yet).
func toSpec(a *TalosClusterArgs, tokenSecret, stackTag string) plan.Spec {
	s := plan.Spec{
		Name:                           a.ClusterName,
		StackTag:                       stackTag,
		TalosVersion:                   a.TalosVersion,
		KubernetesVersion:              a.KubernetesVersion,
		Endpoint:                       a.Endpoint,
		ExtraSANs:                      a.ExtraSans,
		VIP:                            a.Vip,
		ExtraManifests:                 a.ExtraManifests,
		InlineManifests:                inlineManifests(a.InlineManifests),
		AllowSchedulingOnControlPlanes: a.AllowSchedulingOnControlPlanes,
		DiskInterface:                  deref(a.DiskInterface),
		InstallDisk:                    a.InstallDisk,
		Patches:                        a.Patches,
		WorkerPatches:                  a.WorkerPatches,
		NodePatches:                    a.NodePatches,
	}
	if i := a.Image; i != nil {
		s.Image = plan.Image{
			Extensions: i.Extensions, KernelArgs: i.KernelArgs, Platform: i.Platform, ISOStorage: i.IsoStorage,
			FactoryURL: i.FactoryUrl, InstallerRegistry: i.InstallerRegistry,
		}
		if t := i.Template; t != nil {
			s.Image.Template = &plan.Template{VMID: t.VmId, Node: t.Node, FullClone: t.FullClone}
		}
	}
	for _, h := range a.Hosts {
		s.Hosts = append(s.Hosts, plan.Host{Node: h.Node, DiskStorage: h.DiskStorage, ISOStorage: h.IsoStorage, TemplateVMID: h.TemplateVmId})
	}
	n := &a.Network
	s.Network = plan.Network{
		NIC: plan.NIC{
			Bridge: n.Bridge, VLAN: n.Vlan, MTU: n.Mtu, Subnet: n.Subnet, Gateway: n.Gateway,
			AddressRange: addressRange(n.AddressRange),
		},
		DNSServers: n.DnsServers, SearchDomain: n.SearchDomain,
	}
	if sec := n.Secondary; sec != nil {
		s.Network.Secondary = &plan.NIC{
			Bridge: sec.Bridge, VLAN: sec.Vlan, MTU: sec.Mtu, Subnet: sec.Subnet, Gateway: sec.Gateway,
			AddressRange: addressRange(sec.AddressRange),
		}
	}
	if cp := a.ControlPlane; cp != nil {
		s.ControlPlane = plan.ControlPlane{
			Count: cp.Count, Nodes: nodeSpecs(cp.Nodes), Size: size(cp.Size),
			Labels: cp.Labels, Taints: taints(cp.Taints), Patches: cp.Patches,
		}
	}
	for _, w := range a.WorkerPools {
		wp := plan.WorkerPool{
			Name: w.Name, Count: w.Count, Nodes: nodeSpecs(w.Nodes), Size: size(w.Size),
			Labels: w.Labels, Taints: taints(w.Taints), Patches: w.Patches,
		}
		for _, d := range w.DataDisks {
			wp.DataDisks = append(wp.DataDisks, plan.DataDisk{SizeGiB: d.Size, Storage: d.Storage, Volume: d.Volume})
		}
		s.WorkerPools = append(s.WorkerPools, wp)
	}
	if c := a.CloudControllerManager; c != nil {
		s.CloudControllerManager = plan.CloudControllerManager{
			Enabled: c.Enabled, TalosCCMManifest: c.TalosCcmManifest, ServingCertApproverManifest: c.ServingCertApproverManifest,
		}
		if p := c.Proxmox; p != nil {
			s.CloudControllerManager.Proxmox = &plan.ProxmoxCCM{
				URL: p.Url, TokenID: p.TokenId, TokenSecret: tokenSecret, Region: p.Region, Insecure: p.Insecure, Manifest: p.Manifest,
			}
		}
	}
	if c := a.Cni; c != nil {
		s.CNI = plan.CNI{
			Name: deref(c.Name), ManifestURLs: c.ManifestUrls, InlineManifests: inlineManifests(c.InlineManifests),
			DisableKubeProxy: c.DisableKubeProxy,
		}
	}
	if len(a.RegistryMirrors) > 0 {
		s.RegistryMirrors = map[string]plan.RegistryMirror{}
		for reg, m := range a.RegistryMirrors {
			pm := plan.RegistryMirror{Endpoints: m.Endpoints, OverridePath: m.OverridePath, SkipFallback: m.SkipFallback}
			if a := m.Auth; a != nil {
				pm.Auth = &plan.RegistryAuth{Username: a.Username, Password: a.Password, IdentityToken: a.IdentityToken}
			}
			s.RegistryMirrors[reg] = pm
		}
	}
	if g := a.GitOps; g != nil {
		s.GitOps = &plan.GitOps{
			Tool: string(g.Tool), InstallManifests: g.InstallManifests,
			Repository: plan.GitRepository{URL: g.Repository.Url, Branch: g.Repository.Branch, Path: g.Repository.Path},
		}
	}
	if v := a.Vm; v != nil {
		s.VM = plan.VMOptions{CPUType: v.CpuType, OnBoot: v.OnBoot, Tags: v.Tags}
	}
	return s
}

func addressRange(r *AddressRange) *plan.AddressRange {
	if r == nil {
		return nil
	}
	return &plan.AddressRange{Start: r.Start, End: r.End}
}

func size(s *VmSize) plan.Size {
	if s == nil {
		return plan.Size{}
	}
	return plan.Size{Cores: s.Cores, Sockets: s.Sockets, MemoryMiB: s.Memory, DiskGiB: s.DiskSize}
}

func nodeSpecs(nodes []NodeSettings) []plan.NodeSpec {
	var out []plan.NodeSpec
	for _, n := range nodes {
		out = append(out, plan.NodeSpec{
			Name: n.Name, Host: n.Host, Address: n.Address, SecondaryAddress: n.SecondaryAddress,
			VMID: n.VmId, MAC: n.MacAddress, Labels: n.Labels, Taints: taints(n.Taints), Patches: n.Patches,
		})
	}
	return out
}

func taints(ts []Taint) []plan.Taint {
	var out []plan.Taint
	for _, t := range ts {
		out = append(out, plan.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}
	return out
}

func inlineManifests(ms []InlineManifest) []plan.InlineManifest {
	var out []plan.InlineManifest
	for _, m := range ms {
		out = append(out, plan.InlineManifest{Name: m.Name, Contents: m.Contents})
	}
	return out
}

func deref[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}
