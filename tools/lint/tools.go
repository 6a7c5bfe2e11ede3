//go:build tools

// Package tools pins golangci-lint, which the Makefile builds into .tools/bin
// for `make lint`. It is its own module so that the linters' dependencies
// never move the provider's.
package tools

import (
	_ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
)
