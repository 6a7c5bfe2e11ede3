// Command javagen writes the Java SDK (sdk/java) from schema/schema.json with
// github.com/pulumi/pulumi-java/pkg. It is its own Go module because pulumi-java pins an
// older github.com/pulumi/pulumi than the provider. Run it with `make sdks`.
package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

func main() {
	schemaPath := flag.String("schema", "../../schema/schema.json", "Pulumi package schema to generate from")
	out := flag.String("out", "../../sdk/java", "Java SDK folder (replaced, except build outputs)")
	flag.Parse()
	if err := run(*schemaPath, *out); err != nil {
		fmt.Fprintf(os.Stderr, "javagen: %v\n", err)
		os.Exit(1)
	}
}

// keep names entries of sdk/java that are build outputs (git-ignored), not generated.
var keep = map[string]bool{"target": true, "build": true}

func run(schemaPath, out string) error {
	data, err := os.ReadFile(schemaPath)
	if err != nil {
		return fmt.Errorf("reading %s (run `make schema` first): %w", schemaPath, err)
	}
	files, err := generate(data)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(out)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("reading %s: %w", out, err)
	}
	for _, e := range entries {
		if !keep[e.Name()] {
			if err := os.RemoveAll(filepath.Join(out, e.Name())); err != nil {
				return fmt.Errorf("removing the old %s: %w", e.Name(), err)
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		target := filepath.Join(out, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", filepath.Dir(target), err)
		}
		if err := os.WriteFile(target, files[p], 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", target, err)
		}
	}
	return nil
}
