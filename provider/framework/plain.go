package framework

import (
	"reflect"
	"strings"

	pschema "github.com/pulumi/pulumi/pkg/v3/codegen/schema"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// PlainInputs marks every input property of the component resource token
// plain in the schema, nested ones, list elements and map values included,
// except the fields of args (the component's Go argument type) whose Go type
// is a pulumi.Input: the SDKs then refuse an Output where a plain value is
// needed, at compile time where the language checks types. infer v1.5.0
// marks only top-level scalar inputs plain (see the package comment).
func PlainInputs(token string, args reflect.Type) SchemaFix {
	return func(spec *pschema.PackageSpec) error {
		res, ok := spec.Resources[token]
		if !ok {
			return nil
		}
		prefix := token[:strings.LastIndex(token, ":")+1] // "pkg:module:", the nested types' prefix
		m := &plainMarker{spec: spec, inputs: inputFields(token, prefix, args), seen: map[string]bool{}}
		for name, prop := range res.InputProperties {
			if !m.inputs[token][name] {
				m.mark(&prop.TypeSpec)
				res.InputProperties[name] = prop
			}
		}
		spec.Resources[token] = res
		return nil
	}
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

// inputFields finds the fields of args and the structs it holds whose Go
// type is a pulumi.Input, by schema type token (token for args itself,
// prefix+struct name for the others, as infer names them) and property name.
func inputFields(token, prefix string, args reflect.Type) map[string]map[string]bool {
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
				walk(st, prefix+st.Name())
			}
		}
	}
	walk(args, token)
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
