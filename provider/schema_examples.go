package provider

import (
	"fmt"
	"strings"

	pschema "github.com/pulumi/pulumi/pkg/v3/codegen/schema"

	"github.com/proxmoxtalos/proxmoxtalos/provider/docs"
)

// addExamples appends to each resource's and function's description its example programs in
// every language (provider/docs): the Registry's "Example Usage" section, and in each SDK
// that language's example.
func addExamples(spec *pschema.PackageSpec) error {
	for tok, examples := range docs.Examples {
		section, err := docs.Render(examples)
		if err != nil {
			return fmt.Errorf("%s: %w", tok, err)
		}
		if r, ok := spec.Resources[tok]; ok {
			r.Description = withSection(r.Description, section)
			spec.Resources[tok] = r
		} else if f, ok := spec.Functions[tok]; ok {
			f.Description = withSection(f.Description, section)
			spec.Functions[tok] = f
		} else {
			return fmt.Errorf("provider/docs has examples for %s, which the schema does not have", tok)
		}
	}
	return nil
}

func withSection(description, section string) string {
	return strings.TrimRight(description, "\n") + "\n\n" + section
}
