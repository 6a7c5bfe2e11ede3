// Command schemagen writes the provider's Pulumi package schema (schema/schema.json) by
// asking the provider itself, through pulumi-go-provider's GetSchema, so the schema can
// never disagree with the binary. Run it with `make schema`.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"

	"github.com/proxmoxtalos/proxmoxtalos/provider"
)

func main() {
	out := flag.String("out", "schema/schema.json", "file to write the schema to")
	version := flag.String("version", "", "package version to record in the schema (the contents of ./VERSION)")
	flag.Parse()
	if err := run(*out, *version); err != nil {
		fmt.Fprintf(os.Stderr, "schemagen: %v\n", err)
		os.Exit(1)
	}
}

// errNothingRegistered is what pulumi-go-provider's builder answers for a provider with no
// resource, component or function: such a provider has no schema to write.
const errNothingRegistered = "at least one resource, component, or function is required"

func run(out, version string) error {
	data, err := generate(version)
	if err != nil && strings.Contains(err.Error(), errNothingRegistered) {
		// The state of a fresh repository, before the first resource lands: no schema, no
		// SDKs (make sdks and the SDK checks follow the schema file's absence).
		fmt.Fprintf(os.Stderr, "schemagen: the provider registers no resource, component or function yet; removing %s\n", out)
		if err := os.Remove(out); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	return nil
}

// generate returns the schema as indented JSON with a trailing newline.
func generate(version string) ([]byte, error) {
	if version == "" {
		return nil, fmt.Errorf("no version given: pass -version (the Makefile passes the contents of ./VERSION)")
	}
	prov, err := provider.New()
	if err != nil {
		return nil, fmt.Errorf("building the provider: %w", err)
	}
	spec, err := p.GetSchema(context.Background(), provider.Name, version, prov)
	if err != nil {
		return nil, fmt.Errorf("asking the provider for its schema: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // descriptions hold markdown with <, > and &
	enc.SetIndent("", "  ")
	if err := enc.Encode(spec); err != nil {
		return nil, fmt.Errorf("encoding the schema: %w", err)
	}
	return buf.Bytes(), nil
}
