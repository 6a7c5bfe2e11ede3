// Command pulumi-resource-proxmoxtalos is the proxmoxtalos Pulumi provider plugin.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/proxmoxtalos/proxmoxtalos/provider"
	// Sets GOGC and GOMAXPROCS early in the program's initialization (see the package).
	_ "github.com/proxmoxtalos/proxmoxtalos/provider/cmd/pulumi-resource-proxmoxtalos/internal/early"
	"github.com/proxmoxtalos/proxmoxtalos/provider/version"
)

func main() {
	// The Pulumi SDK logs secrets at -v=9 (see provider.MaxLogVerbosity).
	os.Args = provider.CapLogVerbosity(os.Args)
	stopProfile := startProfile()
	if err := provider.Run(context.Background(), version.Version); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		stopProfile()
		os.Exit(1)
	}
	stopProfile()
}
