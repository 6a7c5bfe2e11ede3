package cluster

import (
	"fmt"
	"strings"
)

// Manifests of the Talos cloud controller manager (siderolabs/talos-cloud-controller-manager
// README, "Method 1: talos machine config") and of the approver for the kubelet serving
// certificates that rotate-server-certificates makes kubelets request (alex1989hu/
// kubelet-serving-cert-approver, the one the Talos guides use).
const (
	TalosCCMManifest            = "https://raw.githubusercontent.com/siderolabs/talos-cloud-controller-manager/v1.12.0/docs/deploy/cloud-controller-manager.yml"
	ServingCertApproverManifest = "https://raw.githubusercontent.com/alex1989hu/kubelet-serving-cert-approver/v0.11.0/deploy/standalone-install.yaml"
)

// vipLink names the NIC that holds the VIP; LinkAliasConfig gives that name to the link
// with the VM's MAC, so the config does not depend on how the guest names interfaces.
const vipLink = "net0"

// The patches below are Talos 1.12 strategic merge patches: one YAML document per
// setting, machine config (v1alpha1) fields or whole documents such as HostnameConfig.

// cloudProviderPatch goes to every node: kubelets leave node initialisation to the
// CCM (which sets spec.providerID) and request serving certificates the approver signs.
func cloudProviderPatch() string {
	return `machine:
  kubelet:
    extraArgs:
      cloud-provider: external
      rotate-server-certificates: "true"
cluster:
  externalCloudProvider:
    enabled: true
`
}

// controlPlanePatch lets the CCM read node metadata through the Talos API and makes the
// control planes install the CCM and the approver after bootstrap.
func controlPlanePatch() string {
	return fmt.Sprintf(`machine:
  features:
    kubernetesTalosAPIAccess:
      enabled: true
      allowedRoles:
        - os:reader
      allowedKubernetesNamespaces:
        - kube-system
cluster:
  externalCloudProvider:
    manifests:
      - %s
  extraManifests:
    - %s
`, TalosCCMManifest, ServingCertApproverManifest)
}

// hostnamePatch sets the node's hostname. Talos 1.12 refuses machine.network.hostname
// next to its HostnameConfig document, so the document itself is patched.
func hostnamePatch(hostname string) string {
	return fmt.Sprintf(`apiVersion: v1alpha1
kind: HostnameConfig
auto: "off"
hostname: %s
`, hostname)
}

// vipPatch makes a control plane take part in the election of the shared VIP on the NIC
// with the given MAC. Talos elects the holder through etcd, so the VIP answers only
// after bootstrap.
func vipPatch(vip, mac string) string {
	return strings.Join([]string{
		fmt.Sprintf(`apiVersion: v1alpha1
kind: LinkAliasConfig
name: %s
selector:
  match: mac(link.permanent_addr) == %q
`, vipLink, strings.ToLower(mac)),
		fmt.Sprintf(`apiVersion: v1alpha1
kind: Layer2VIPConfig
name: %s
link: %s
`, vip, vipLink),
	}, "---\n")
}
