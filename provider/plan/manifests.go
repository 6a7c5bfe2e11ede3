package plan

import (
	"encoding/json"
	"strings"
)

// q quotes a string for YAML: a JSON string is a valid YAML double-quoted
// scalar, and escapes everything that could break the document.
func q(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// indent prefixes every line of s with n spaces.
func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = pad + l
	}
	return strings.Join(lines, "\n") + "\n"
}

// proxmoxCCMSecret renders the credentials Secret the Proxmox CCM reads
// (kube-system/proxmox-cloud-controller-manager, key config.yaml; format from
// sergelogvinov/proxmox-cloud-controller-manager docs/install.md).
func proxmoxCCMSecret(p *ProxmoxCCM, region string) string {
	insecure := "false"
	if p.Insecure {
		insecure = "true"
	}
	config := "clusters:\n" +
		"  - url: " + q(p.URL) + "\n" +
		"    insecure: " + insecure + "\n" +
		"    token_id: " + q(p.TokenID) + "\n" +
		"    token_secret: " + q(p.TokenSecret) + "\n" +
		"    region: " + q(region) + "\n"
	return "apiVersion: v1\n" +
		"kind: Secret\n" +
		"metadata:\n" +
		"  name: proxmox-cloud-controller-manager\n" +
		"  namespace: kube-system\n" +
		"type: Opaque\n" +
		"stringData:\n" +
		"  config.yaml: |\n" +
		indent(config, 4)
}

// gitOpsSync renders the objects that make the GitOps tool sync the
// repository: a Flux GitRepository and Kustomization (source.toolkit.fluxcd.io/v1,
// kustomize.toolkit.fluxcd.io/v1 in flux-system), or an Argo CD Application
// (argoproj.io/v1alpha1 in argocd) with automated sync.
func gitOpsSync(g *GitOps, cluster string) string {
	branch := orDefault(g.Repository.Branch, "main")
	path := orDefault(g.Repository.Path, ".")
	if g.Tool == "flux" {
		return "apiVersion: source.toolkit.fluxcd.io/v1\n" +
			"kind: GitRepository\n" +
			"metadata:\n" +
			"  name: " + q(cluster) + "\n" +
			"  namespace: flux-system\n" +
			"spec:\n" +
			"  interval: 1m\n" +
			"  url: " + q(g.Repository.URL) + "\n" +
			"  ref:\n" +
			"    branch: " + q(branch) + "\n" +
			"---\n" +
			"apiVersion: kustomize.toolkit.fluxcd.io/v1\n" +
			"kind: Kustomization\n" +
			"metadata:\n" +
			"  name: " + q(cluster) + "\n" +
			"  namespace: flux-system\n" +
			"spec:\n" +
			"  interval: 10m\n" +
			"  path: " + q(path) + "\n" +
			"  prune: true\n" +
			"  sourceRef:\n" +
			"    kind: GitRepository\n" +
			"    name: " + q(cluster) + "\n"
	}
	return "apiVersion: v1\n" +
		"kind: Namespace\n" +
		"metadata:\n" +
		"  name: argocd\n" +
		"---\n" +
		"apiVersion: argoproj.io/v1alpha1\n" +
		"kind: Application\n" +
		"metadata:\n" +
		"  name: " + q(cluster) + "\n" +
		"  namespace: argocd\n" +
		"spec:\n" +
		"  project: default\n" +
		"  source:\n" +
		"    repoURL: " + q(g.Repository.URL) + "\n" +
		"    targetRevision: " + q(branch) + "\n" +
		"    path: " + q(path) + "\n" +
		"  destination:\n" +
		"    server: https://kubernetes.default.svc\n" +
		"    namespace: default\n" +
		"  syncPolicy:\n" +
		"    automated:\n" +
		"      prune: true\n" +
		"      selfHeal: true\n"
}
