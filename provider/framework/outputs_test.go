package framework

import (
	"reflect"
	"strings"
	"testing"

	pschema "github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

type derived struct {
	View   map[string]string `pulumi:"view,optional"`
	Change *string           `pulumi:"change,optional"`
}

func resourceWith(inputs []string, outputs ...string) pschema.ResourceSpec {
	res := pschema.ResourceSpec{InputProperties: map[string]pschema.PropertySpec{}}
	res.Properties = map[string]pschema.PropertySpec{}
	for _, n := range inputs {
		res.InputProperties[n] = pschema.PropertySpec{}
	}
	for _, n := range outputs {
		res.Properties[n] = pschema.PropertySpec{}
	}
	return res
}

func TestOutputsOnlyKeepsDerivedValuesAsOutputs(t *testing.T) {
	spec := &pschema.PackageSpec{Resources: map[string]pschema.ResourceSpec{
		"p:m:R": resourceWith([]string{"node", "view", "change"}, "node", "view", "change", "digest"),
	}}
	if err := OutputsOnly(map[string]reflect.Type{"p:m:R": reflect.TypeFor[derived]()})(spec); err != nil {
		t.Fatal(err)
	}
	res := spec.Resources["p:m:R"]
	for _, n := range []string{"view", "change"} {
		if _, ok := res.InputProperties[n]; ok {
			t.Errorf("%s is still an input", n)
		}
		if _, ok := res.Properties[n]; !ok {
			t.Errorf("%s is no longer an output", n)
		}
	}
	if _, ok := res.InputProperties["node"]; !ok {
		t.Error("node, a user input, was removed")
	}
}

// A property the resource does not have (renamed, or no longer an input) is
// an error, not a fix that silently does nothing.
func TestOutputsOnlyRefusesAStaleList(t *testing.T) {
	spec := &pschema.PackageSpec{Resources: map[string]pschema.ResourceSpec{
		"p:m:R": resourceWith([]string{"node", "view"}, "node", "view", "change"),
	}}
	err := OutputsOnly(map[string]reflect.Type{"p:m:R": reflect.TypeFor[derived]()})(spec)
	if err == nil || !strings.Contains(err.Error(), "change") {
		t.Fatalf("want an error naming change, got %v", err)
	}
	if err := OutputsOnly(map[string]reflect.Type{"p:m:Other": reflect.TypeFor[derived]()})(spec); err == nil {
		t.Fatal("want an error for a resource the schema does not have")
	}
}
