package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/proxmoxtalos/proxmoxtalos/tests/demo/realtools"
	"github.com/proxmoxtalos/proxmoxtalos/tests/kube"
)

// showKubernetesNodes lists the cluster's nodes from the Kubernetes API the example's
// kubeconfig points at (the lab's real kube-apiserver, on the VIP), with the providerID the
// cloud controller manager set, then as the real kubectl shows them when it is on PATH.
// Examples without a kubeconfig output skip this.
func showKubernetesNodes(cli *pulumiCLI) error {
	kc, ok, err := cli.output("kubeconfig")
	if err != nil || !ok || strings.TrimSpace(kc) == "" {
		return err
	}
	step("Kubernetes nodes and their providerIDs (the lab's kube-apiserver, through the kubeconfig output)")
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
	return runKubectl(kc, realtools.KubectlNodesArgs...)
}

// runKubectl runs the real kubectl with the kubeconfig output, when kubectl is on PATH.
func runKubectl(kubeconfig string, args ...string) error {
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		fmt.Println("(kubectl is not on PATH: skipping `kubectl " + strings.Join(args, " ") + "`)")
		return nil
	}
	dir, err := os.MkdirTemp("", "demo-kubeconfig-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cmd, err := realtools.Kubectl(bin, kubeconfig, dir, args...)
	if err != nil {
		return err
	}
	step("kubectl " + strings.Join(args, " "))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kubectl %s: %w", strings.Join(args, " "), err)
	}
	return nil
}
