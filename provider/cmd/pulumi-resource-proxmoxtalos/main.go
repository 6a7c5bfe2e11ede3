// Command pulumi-resource-proxmoxtalos is the proxmoxtalos Pulumi provider plugin.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/proxmoxtalos/proxmoxtalos/provider"
	"github.com/proxmoxtalos/proxmoxtalos/provider/version"
)

func main() {
	if err := provider.Run(context.Background(), version.Version); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}
