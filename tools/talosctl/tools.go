//go:build tools

// Package tools pins talosctl, which the Makefile builds into .tools/bin so
// that tests and `make demo` run the real Talos client against the lab. It is
// its own module because talos's dependency graph (Kubernetes, containerd)
// must not move the provider's or the Pulumi CLI's dependencies.
package tools

import (
	_ "github.com/siderolabs/talos/cmd/talosctl"
)
