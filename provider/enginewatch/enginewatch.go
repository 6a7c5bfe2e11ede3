// Package enginewatch ends a provider process whose Pulumi engine is gone.
//
// The engine (the pulumi CLI) starts the provider and talks to it over
// gRPC; when the CLI is killed (SIGKILL, a lost CI runner, an OOM kill) the
// provider is left running. The Pulumi SDK's own health check
// (sdk/go/common/util/rpcutil/health.go, used by provider.MainContext) asks
// the engine only every five minutes, so the provider and the operations
// it was running (waiting on Proxmox tasks, polling Talos nodes) went on
// for minutes with nobody to report to. This package notices within
// seconds: the process's parent changed (the CLI died and the provider was
// re-parented), or the engine's address refuses connections.
package enginewatch

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"
)

// Options tune Watch.
type Options struct {
	// Interval between checks (default 1s).
	Interval time.Duration
	// Refusals is how many checks in a row must find the engine's address
	// refusing before the engine counts as gone (default 3).
	Refusals int
	// Exit ends the process (default: a line on stderr, then os.Exit(1)).
	Exit func(reason string)
}

// EngineAddress finds the engine's address among the plugin's arguments:
// the engine passes it last ("127.0.0.1:<port>"). "" when there is none
// (a provider started by hand for debugging).
func EngineAddress(args []string) string {
	if len(args) < 2 {
		return ""
	}
	last := args[len(args)-1]
	if host, port, err := net.SplitHostPort(last); err == nil && host != "" && port != "" {
		return last
	}
	return ""
}

// Watch checks, until ctx ends, that the engine at addr is still there and
// that the process's parent has not changed, and calls o.Exit when not.
func Watch(ctx context.Context, addr string, o Options) {
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.Refusals <= 0 {
		o.Refusals = 3
	}
	if o.Exit == nil {
		o.Exit = func(reason string) {
			fmt.Fprintf(os.Stderr, "the Pulumi engine is gone (%s): the provider exits\n", reason)
			os.Exit(1)
		}
	}
	parent := os.Getppid()
	refused := 0
	t := time.NewTicker(o.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if p := os.Getppid(); parent > 1 && p != parent {
			o.Exit(fmt.Sprintf("its parent process %d ended", parent))
			return
		}
		conn, err := net.DialTimeout("tcp", addr, o.Interval)
		if err == nil {
			_ = conn.Close() // a probe: only whether the dial succeeded matters
			refused = 0
			continue
		}
		if refused++; refused >= o.Refusals {
			o.Exit(fmt.Sprintf("%s refuses connections: %v", addr, err))
			return
		}
	}
}
