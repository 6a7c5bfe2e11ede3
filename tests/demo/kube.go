package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/proxmoxtalos/proxmoxtalos/tests/kube"
)

// showKubernetesNodes lists the cluster's nodes from the Kubernetes API the example's
// kubeconfig points at (the lab answers on the VIP), like `kubectl get nodes -o wide`, with
// the providerID the cloud controller manager set. Examples without a kubeconfig output
// skip this.
func showKubernetesNodes(cli *pulumiCLI) error {
	kc, ok, err := cli.output("kubeconfig")
	if err != nil || !ok || strings.TrimSpace(kc) == "" {
		return err
	}
	step("kubectl get nodes -o wide (the lab's Kubernetes API, through the kubeconfig output)")
	nodes, err := kube.Nodes([]byte(kc), "")
	if err != nil {
		return fmt.Errorf("listing the Kubernetes nodes: %w", err)
	}
	kube.Print(os.Stdout, nodes)
	for _, n := range nodes {
		if !n.Ready || n.ProviderID == "" {
			return fmt.Errorf("node %s is not Ready with a providerID", n.Name)
		}
	}
	return nil
}
