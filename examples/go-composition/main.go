// Command proxmoxtalos-go-composition is the Pulumi program of this example: a TalosCluster
// fed by a stack reference, a resource of the same program and a configuration secret.
package main

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/proxmoxtalos/proxmoxtalos/examples/go-composition/composition"
)

func main() { pulumi.Run(composition.Program) }
