package framework

import (
	"fmt"
	"path"
	"reflect"

	"github.com/pulumi/pulumi-go-provider/infer"
	pschema "github.com/pulumi/pulumi/pkg/v3/codegen/schema"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
)

// DescribeEnums gives each enum type of enums the description its Annotate
// writes; infer v1.5.0 drops it (see the package comment). moduleMap is the
// provider's (infer.ProviderBuilder.WithModuleMap). An enum that is not in
// the schema is an error, so the list cannot go stale silently.
func DescribeEnums(moduleMap map[tokens.ModuleName]tokens.ModuleName, enums ...infer.Annotated) SchemaFix {
	return func(spec *pschema.PackageSpec) error {
		for _, e := range enums {
			t := reflect.TypeOf(e).Elem()
			// infer's token for a type: <package>:<last element of the Go package path>:<type name>.
			mod := tokens.ModuleName(path.Base(t.PkgPath()))
			if mapped, ok := moduleMap[mod]; ok {
				mod = mapped
			}
			tok := spec.Name + ":" + string(mod) + ":" + t.Name()
			ty, ok := spec.Types[tok]
			if !ok || len(ty.Enum) == 0 {
				return fmt.Errorf("DescribeEnums was given %s, but the schema has no enum type %s", t, tok)
			}
			var a typeDescription
			e.Annotate(&a)
			ty.Description = a.text
			spec.Types[tok] = ty
		}
		return nil
	}
}

// typeDescription is an infer.Annotator that keeps what an enum's Annotate says about the type.
type typeDescription struct{ text string }

func (a *typeDescription) Describe(_ any, description string)        { a.text = description }
func (*typeDescription) SetDefault(any, any, ...string)              {}
func (*typeDescription) SetToken(tokens.ModuleName, tokens.TypeName) {}
func (*typeDescription) AddAlias(tokens.ModuleName, tokens.TypeName) {}
func (*typeDescription) Deprecate(any, string)                       {}
