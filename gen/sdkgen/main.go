// Command sdkgen writes the Go, Node.js and Python SDKs (sdk/go, sdk/nodejs, sdk/python and
// the Go SDK's module file sdk/go.mod) from schema/schema.json by calling Pulumi's codegen
// libraries directly: `pulumi package gen-sdk` would need language hosts that cannot be
// installed on our machines. Run it with `make sdks`.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

func main() {
	schemaPath := flag.String("schema", "schema/schema.json", "Pulumi package schema to generate from")
	out := flag.String("out", "sdk", "SDK root folder")
	langs := flag.String("lang", strings.Join(languages, ","), "comma-separated languages to generate")
	pulumiGoSDK := flag.String("pulumi-go-sdk", "", "version of github.com/pulumi/pulumi/sdk/v3 the Go SDK requires (from go.mod)")
	flag.Parse()
	if err := run(*schemaPath, *out, strings.Split(*langs, ","), *pulumiGoSDK); err != nil {
		fmt.Fprintf(os.Stderr, "sdkgen: %v\n", err)
		os.Exit(1)
	}
}

func run(schemaPath, out string, langs []string, pulumiGoSDK string) error {
	if pulumiGoSDK == "" {
		return fmt.Errorf("no -pulumi-go-sdk version given (the Makefile reads it from go.mod)")
	}
	data, err := os.ReadFile(schemaPath)
	if err != nil {
		return fmt.Errorf("reading %s (run `make schema` first): %w", schemaPath, err)
	}
	for _, lang := range langs {
		files, err := generate(data, lang, pulumiGoSDK)
		if err != nil {
			return err
		}
		if err := write(out, lang, files); err != nil {
			return err
		}
	}
	return nil
}
