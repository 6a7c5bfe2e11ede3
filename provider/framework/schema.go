package framework

import (
	"context"
	"encoding/json"
	"fmt"

	p "github.com/pulumi/pulumi-go-provider"
	pschema "github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

// A SchemaFix changes the schema infer generated.
type SchemaFix func(spec *pschema.PackageSpec) error

// WithSchemaFixes applies fixes, in order, to the schema the provider
// serves: the schema is decoded and encoded once, whatever their number.
func WithSchemaFixes(prov p.Provider, fixes ...SchemaFix) p.Provider {
	get := prov.GetSchema
	prov.GetSchema = func(ctx context.Context, req p.GetSchemaRequest) (p.GetSchemaResponse, error) {
		resp, err := get(ctx, req)
		if err != nil {
			return resp, err
		}
		resp.Schema, err = fixSchema(resp.Schema, fixes)
		return resp, err
	}
	return prov
}

func fixSchema(schemaJSON string, fixes []SchemaFix) (string, error) {
	var spec pschema.PackageSpec
	if err := json.Unmarshal([]byte(schemaJSON), &spec); err != nil {
		return "", fmt.Errorf("reading the provider's schema: %w", err)
	}
	for _, fix := range fixes {
		if err := fix(&spec); err != nil {
			return "", err
		}
	}
	out, err := json.Marshal(spec)
	return string(out), err
}
