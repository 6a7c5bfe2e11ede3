package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
	pschema "github.com/pulumi/pulumi/pkg/v3/codegen/schema"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// The component's inputs are plain values: the plan is computed from them
// when the component is constructed (see TalosClusterArgs). pulumi-go-provider
// v1.5.0 marks only top-level scalar inputs `plain` in the schema, so the
// generated SDKs would accept Outputs in lists and nested fields, which then
// cannot be planned. WithPlainInputs marks every input property of the
// component plain, nested ones included, except fields whose Go type is a
// pulumi.Input (the Proxmox CCM token secret): the SDKs then refuse an Output
// where a plain value is needed, at compile time where the language checks
// types.

// WithPlainInputs makes the provider's schema mark the component's inputs
// plain, and its Construct refuse inputs that are not known yet.
func WithPlainInputs(prov p.Provider) p.Provider {
	prov.Construct = quietShutdown(refuseUnknownInputs(prov.Construct))
	get := prov.GetSchema
	prov.GetSchema = func(ctx context.Context, req p.GetSchemaRequest) (p.GetSchemaResponse, error) {
		resp, err := get(ctx, req)
		if err != nil {
			return resp, err
		}
		resp.Schema, err = PlainInputs(resp.Schema)
		return resp, err
	}
	return prov
}

// PlainInputs rewrites a schema (JSON) so that the TalosCluster inputs are
// plain.
func PlainInputs(schemaJSON string) (string, error) {
	var spec pschema.PackageSpec
	if err := json.Unmarshal([]byte(schemaJSON), &spec); err != nil {
		return "", fmt.Errorf("reading the provider's schema: %w", err)
	}
	res, ok := spec.Resources[tokenComponent]
	if !ok {
		return schemaJSON, nil
	}
	m := &plainMarker{spec: &spec, inputs: inputFields(), seen: map[string]bool{}}
	for name, prop := range res.InputProperties {
		if !m.inputs[tokenComponent][name] {
			m.mark(&prop.TypeSpec)
			res.InputProperties[name] = prop
		}
	}
	spec.Resources[tokenComponent] = res
	out, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

type plainMarker struct {
	spec *pschema.PackageSpec
	// inputs are the properties that stay inputs, by type token.
	inputs map[string]map[string]bool
	seen   map[string]bool
}

// mark makes a type plain, its elements and the object types it refers to
// included.
func (m *plainMarker) mark(ts *pschema.TypeSpec) {
	ts.Plain = true
	if ts.Items != nil {
		m.mark(ts.Items)
	}
	if ts.AdditionalProperties != nil {
		m.mark(ts.AdditionalProperties)
	}
	token, ok := strings.CutPrefix(ts.Ref, "#/types/")
	if !ok || m.seen[token] {
		return
	}
	m.seen[token] = true
	typ, ok := m.spec.Types[token]
	if !ok || typ.Type != "object" {
		return
	}
	for name, prop := range typ.Properties {
		if !m.inputs[token][name] {
			m.mark(&prop.TypeSpec)
			typ.Properties[name] = prop
		}
	}
	m.spec.Types[token] = typ
}

// inputFields finds the fields of the component's argument types whose Go
// type is a pulumi.Input, by schema type token (the component's own token
// for the top level) and property name.
func inputFields() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	inputType := reflect.TypeFor[pulumi.Input]()
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type, token string)
	walk = func(t reflect.Type, token string) {
		if seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("pulumi"), ",")
			if name == "" {
				continue
			}
			if f.Type.Implements(inputType) {
				if out[token] == nil {
					out[token] = map[string]bool{}
				}
				out[token][name] = true
				continue
			}
			if st := structOf(f.Type); st != nil {
				walk(st, "proxmoxtalos:index:"+st.Name())
			}
		}
	}
	walk(reflect.TypeFor[TalosClusterArgs](), tokenComponent)
	return out
}

// structOf is the struct type a field holds, through pointers, slices and
// maps, or nil.
func structOf(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() == reflect.Struct {
		return t
	}
	return nil
}
