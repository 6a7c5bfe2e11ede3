//go:build tools

// Package tools pins the Pulumi CLI and the Pulumi YAML language host that the
// Makefile builds into .tools/bin. They are built from source because no
// prebuilt Pulumi release can be downloaded on the machines this project runs on.
package tools

import (
	_ "github.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml"
	_ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"
)
