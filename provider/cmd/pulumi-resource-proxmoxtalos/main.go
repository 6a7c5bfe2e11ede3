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
	// The Pulumi SDK logs secrets at -v=9 (see provider.MaxLogVerbosity).
	os.Args = provider.CapLogVerbosity(os.Args)
	tuneGC()
	tuneProcs()
	stopProfile := startProfile()
	if err := provider.Run(context.Background(), version.Version); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		stopProfile()
		os.Exit(1)
	}
	stopProfile()
}
