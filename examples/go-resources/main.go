// Command proxmoxtalos-go-resources is the Pulumi program of this example: a Talos
// Kubernetes cluster on Proxmox VE built from the low-level proxmoxtalos resources.
package main

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/examples/go-resources/cluster"
)

func main() { pulumi.Run(cluster.Program) }
