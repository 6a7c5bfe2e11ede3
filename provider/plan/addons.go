package plan

import (
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Manifest URLs applied when the cloud controller manager is on, pinned to
// release tags so that a cluster built today and one built next month get the
// same manifests (a branch would change under the user). Talos CCM:
// siderolabs/talos-cloud-controller-manager docs/install.md ("Method 1: talos
// machine config"); tag v1.12.0, whose manifest runs image v1.12.0. Approver:
// the one Talos' own guides use for rotate-server-certificates; tag v0.11.0
// (image 0.11.0). Proxmox CCM: sergelogvinov/proxmox-cloud-controller-manager
// docs/install.md, tag v0.13.1 (image v0.13.1); its "-talos" manifest runs
// only cloud-node-lifecycle, leaving node initialisation to the Talos CCM.
// Bumping a tag changes every node's configuration (a preview shows it).
const (
	TalosCCMManifest            = "https://raw.githubusercontent.com/siderolabs/talos-cloud-controller-manager/v1.12.0/docs/deploy/cloud-controller-manager.yml"
	ServingCertApproverManifest = "https://raw.githubusercontent.com/alex1989hu/kubelet-serving-cert-approver/v0.11.0/deploy/standalone-install.yaml"
	ProxmoxCCMManifest          = "https://raw.githubusercontent.com/sergelogvinov/proxmox-cloud-controller-manager/v0.13.1/docs/deploy/cloud-controller-manager-talos.yml"
)

func (b *builder) checkCNI() {
	c := &b.spec.CNI
	out := &b.plan.Cluster
	name := orDefault(c.Name, "flannel")
	hasManifests := len(c.ManifestURLs) > 0 || len(c.InlineManifests) > 0
	switch name {
	case "flannel", "none":
		if hasManifests {
			b.probs.add("cni.name", "CNI %q takes no manifests: use \"cilium\" or \"custom\" to install a CNI from manifests", name)
		}
		out.CNI = CNIConfig{Name: name, URLs: []string{}}
	case "cilium", "custom":
		if !hasManifests {
			b.probs.add("cni.manifestUrls", "CNI %q needs its manifests: set cni.manifestUrls or cni.inlineManifests (e.g. the output of `helm template cilium`)", name)
		}
		// Talos installs "custom" CNIs from URLs; without URLs Talos manages
		// no CNI and the inline manifests install it.
		talosName := "custom"
		if len(c.ManifestURLs) == 0 {
			talosName = "none"
		}
		out.CNI = CNIConfig{Name: talosName, URLs: b.checkURLs("cni.manifestUrls", c.ManifestURLs)}
	default:
		b.probs.add("cni.name", "%q is not a CNI choice: use \"flannel\" (default), \"cilium\", \"custom\" or \"none\"", c.Name)
		return
	}
	out.ProxyDisabled = boolOr(c.DisableKubeProxy, name == "cilium")
	if out.ProxyDisabled && (name == "flannel" || name == "none") {
		b.probs.add("cni.disableKubeProxy", "kube-proxy can only be disabled with a CNI that replaces it (cilium or custom); with %q services would stop working", name)
	}
}

func (b *builder) checkCCM() {
	c := &b.spec.CloudControllerManager
	if !boolOr(c.Enabled, true) {
		if c.Proxmox != nil {
			b.probs.add("cloudControllerManager.proxmox", "the Proxmox CCM runs beside the Talos CCM: set cloudControllerManager.enabled to true or remove proxmox")
		}
		return
	}
	b.ccm = true
	manifests := []string{
		orDefault(c.TalosCCMManifest, TalosCCMManifest),
		orDefault(c.ServingCertApproverManifest, ServingCertApproverManifest),
	}
	if p := c.Proxmox; p != nil {
		b.checkProxmoxCCM(p)
		manifests = append(manifests, orDefault(p.Manifest, ProxmoxCCMManifest))
	}
	b.plan.Cluster.ExternalCloudProvider = &ExternalCloudProvider{
		Manifests: b.checkURLs("cloudControllerManager.manifests", manifests),
	}
}

var tokenID = regexp.MustCompile(`^[^@!\s]+@[^@!\s]+![A-Za-z][A-Za-z0-9._-]*$`) // pve: user@realm!tokenname

func (b *builder) checkProxmoxCCM(p *ProxmoxCCM) {
	f := "cloudControllerManager.proxmox"
	if u, err := url.Parse(p.URL); err != nil || u.Scheme != "https" || u.Host == "" {
		b.probs.add(f+".url", "%q is not the https URL of the Proxmox API (like https://pve.example.com:8006/api2/json)", p.URL)
	}
	if !tokenID.MatchString(p.TokenID) {
		b.probs.add(f+".tokenId", "%q is not a Proxmox API token id like \"kubernetes@pve!ccm\"", p.TokenID)
	}
	if p.TokenSecret == "" {
		// Never echo the secret; only say it is missing.
		b.probs.add(f+".tokenSecret", "the token secret is empty: create the token with `pveum user token add` and pass its secret")
	}
	b.plan.Cluster.InlineManifests = append(b.plan.Cluster.InlineManifests, InlineManifest{
		Name:     "proxmox-cloud-controller-manager-config",
		Contents: proxmoxCCMSecret(p, orDefault(p.Region, b.spec.Name)),
	})
}

func (b *builder) checkMirrors() {
	out := []Mirror{}
	for _, reg := range slices.Sorted(maps.Keys(b.spec.RegistryMirrors)) {
		m := b.spec.RegistryMirrors[reg]
		f := "registryMirrors[\"" + reg + "\"]"
		if reg == "" || strings.Contains(reg, "://") || strings.ContainsAny(reg, "/ \t") {
			b.probs.add(f, "%q is not a registry host like \"docker.io\" or \"ghcr.io\" (no scheme, no path; \"*\" matches all)", reg)
			continue
		}
		if len(m.Endpoints) == 0 {
			b.probs.add(f+".endpoints", "a mirror needs at least one endpoint URL, like \"https://mirror.example.com\"")
			continue
		}
		out = append(out, Mirror{
			Registry:     reg,
			Endpoints:    b.checkURLs(f+".endpoints", m.Endpoints),
			OverridePath: m.OverridePath,
			SkipFallback: m.SkipFallback,
			Auth:         b.checkAuth(f+".auth", m.Auth),
		})
	}
	b.plan.Cluster.RegistryMirrors = out
}

// checkAuth: username and password together, or an identity token.
func (b *builder) checkAuth(f string, a *RegistryAuth) *RegistryAuth {
	if a == nil {
		return nil
	}
	switch {
	case a.Username != "" && a.Password == "":
		b.probs.add(f+".password", "username %q is set without a password: give both, or an identityToken instead", a.Username)
	case a.Username == "" && a.Password != "":
		b.probs.add(f+".username", "a password is set without a username: give both, or an identityToken instead")
	case a.Username == "" && a.IdentityToken == "":
		b.probs.add(f, "no credentials: give username and password, or identityToken, or leave auth out for anonymous pulls")
	case a.IdentityToken != "" && a.Username != "":
		b.probs.add(f+".identityToken", "an identityToken and a username are both set: give one way to log in")
	}
	return a
}

func (b *builder) checkManifests() {
	out := &b.plan.Cluster
	out.ExtraManifests = b.checkURLs("extraManifests", b.spec.ExtraManifests)
	if out.InlineManifests == nil {
		out.InlineManifests = []InlineManifest{}
	}
	b.addInline("cni.inlineManifests", b.spec.CNI.InlineManifests)
	b.addInline("inlineManifests", b.spec.InlineManifests)
}

// addInline appends user inline manifests, checking names are unique across
// all of them (Talos keys inline manifests by name).
func (b *builder) addInline(field string, ms []InlineManifest) {
	out := &b.plan.Cluster
	for i, m := range ms {
		f := idx(field, i)
		switch {
		case m.Name == "":
			b.probs.add(f+".name", "an inline manifest needs a name")
		case strings.TrimSpace(m.Contents) == "":
			b.probs.add(f+".contents", "inline manifest %q is empty", m.Name)
		case slices.ContainsFunc(out.InlineManifests, func(o InlineManifest) bool { return o.Name == m.Name }):
			b.probs.add(f+".name", "inline manifest name %q is used twice (the cluster's own manifests use names ending in \"-config\" and \"gitops-sync\")", m.Name)
		default:
			out.InlineManifests = append(out.InlineManifests, m)
		}
	}
}

func (b *builder) checkGitOps() {
	g := b.spec.GitOps
	if g == nil {
		return
	}
	if g.Tool != "flux" && g.Tool != "argocd" {
		b.probs.add("gitOps.tool", "%q is not a GitOps tool: use \"flux\" or \"argocd\"", g.Tool)
		return
	}
	if len(g.InstallManifests) == 0 {
		b.probs.add("gitOps.installManifests", "give the URL of the %s install manifests, pinned to a version", g.Tool)
	}
	if g.Repository.URL == "" || strings.ContainsAny(g.Repository.URL, " \t\n") {
		b.probs.add("gitOps.repository.url", "%q is not a git repository URL", g.Repository.URL)
		return
	}
	out := &b.plan.Cluster
	out.ExtraManifests = append(out.ExtraManifests, b.checkURLs("gitOps.installManifests", g.InstallManifests)...)
	out.InlineManifests = append(out.InlineManifests, InlineManifest{
		Name:     "gitops-sync",
		Contents: gitOpsSync(g, b.spec.Name),
	})
}

// checkURLs checks each entry is an http(s) URL and returns a copy.
func (b *builder) checkURLs(field string, urls []string) []string {
	out := []string{}
	for i, s := range urls {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			b.probs.add(idx(field, i), "%q is not an http(s) URL", s)
			continue
		}
		out = append(out, s)
	}
	return out
}
