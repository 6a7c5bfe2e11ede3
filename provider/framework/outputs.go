package framework

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	pschema "github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

// OutputsOnly takes, for each resource token, the properties of its derived
// struct (embedded in the resource's Args, values that Check computes) out of
// the resource's input properties; they stay outputs. infer lists every Args
// field as an input, and the fields must be Args fields: Pulumi's display
// takes a detailed diff's new values from the checked inputs, never from the
// planned outputs (pulumi/pkg engine/detailedDiff.go TranslateDetailedDiff),
// so a value the preview shows next to a change has to travel there. Without
// this fix every SDK would offer inputs a user must leave unset. A property
// that is not both an input and an output of its resource is an error, so
// that the fix cannot go stale silently.
func OutputsOnly(derived map[string]reflect.Type) SchemaFix {
	return func(spec *pschema.PackageSpec) error {
		for token, t := range derived {
			res, ok := spec.Resources[token]
			if !ok {
				return fmt.Errorf("OutputsOnly: the schema has no resource %s", token)
			}
			for i := range t.NumField() {
				name, _, _ := strings.Cut(t.Field(i).Tag.Get("pulumi"), ",")
				if name == "" {
					continue
				}
				_, in := res.InputProperties[name]
				_, out := res.Properties[name]
				if !in || !out {
					return fmt.Errorf("OutputsOnly: %s.%s (%s) is not both an input and an output of %s", t, t.Field(i).Name, name, token)
				}
				delete(res.InputProperties, name)
				res.RequiredInputs = slices.DeleteFunc(res.RequiredInputs, func(s string) bool { return s == name })
			}
			spec.Resources[token] = res
		}
		return nil
	}
}
