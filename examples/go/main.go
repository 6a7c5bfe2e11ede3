// Command proxmoxtalos-go is the Pulumi program of this example: a Talos Kubernetes cluster
// on Proxmox VE from the proxmoxtalos TalosCluster component.
package main

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/examples/go/cluster"
)

func main() { pulumi.Run(cluster.Program) }
