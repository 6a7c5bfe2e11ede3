package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"reflect"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	pschema "github.com/pulumi/pulumi/pkg/v3/codegen/schema"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"

	"github.com/proxmoxtalos/proxmoxtalos/provider/cluster"
	"github.com/proxmoxtalos/proxmoxtalos/provider/proxmox"
	"github.com/proxmoxtalos/proxmoxtalos/provider/talos"
)

// describedEnums are the enum types whose own Annotate description goes into the schema.
// infer v1.5.0 registers an enum type from its values only (pulumi-go-provider
// infer/types.go, crawlTypes), so without this the type's description is lost.
// TestSchemaDescribesEverything fails for an enum missing here.
var describedEnums = []infer.Annotated{
	new(cluster.DiskBus), new(cluster.TaintEffect), new(cluster.CniName), new(cluster.GitOpsTool),
	new(cluster.NodeRole),
	new(proxmox.Bios), new(proxmox.ScsiHardware), new(proxmox.OsType), new(proxmox.DiskCache),
	new(proxmox.NetworkModel), new(proxmox.DownloadContent), new(proxmox.ChecksumAlgorithm),
	new(proxmox.Decompression),
	new(talos.ApplyMode), new(talos.MachineType), new(talos.ValidationMode), new(talos.Architecture),
}

// withEnumDescriptions adds the enum types' descriptions and the example programs to the
// provider's schema.
func withEnumDescriptions(prov p.Provider, moduleMap map[tokens.ModuleName]tokens.ModuleName) p.Provider {
	get := prov.GetSchema
	prov.GetSchema = func(ctx context.Context, req p.GetSchemaRequest) (p.GetSchemaResponse, error) {
		resp, err := get(ctx, req)
		if err != nil {
			return resp, err
		}
		resp.Schema, err = describeEnums(resp.Schema, moduleMap)
		return resp, err
	}
	return prov
}

func describeEnums(schemaJSON string, moduleMap map[tokens.ModuleName]tokens.ModuleName) (string, error) {
	var spec pschema.PackageSpec
	if err := json.Unmarshal([]byte(schemaJSON), &spec); err != nil {
		return "", fmt.Errorf("reading the provider's schema: %w", err)
	}
	for _, e := range describedEnums {
		t := reflect.TypeOf(e).Elem()
		// infer's token for a type: <package>:<last element of the Go package path>:<type name>.
		mod := tokens.ModuleName(path.Base(t.PkgPath()))
		if mapped, ok := moduleMap[mod]; ok {
			mod = mapped
		}
		tok := spec.Name + ":" + string(mod) + ":" + t.Name()
		ty, ok := spec.Types[tok]
		if !ok || len(ty.Enum) == 0 {
			return "", fmt.Errorf("describedEnums names %s, but the schema has no enum type %s", t, tok)
		}
		var a typeDescription
		e.Annotate(&a)
		ty.Description = a.text
		spec.Types[tok] = ty
	}
	// The same pass over the schema adds the example programs (schema_examples.go).
	if err := addExamples(&spec); err != nil {
		return "", err
	}
	out, err := json.Marshal(spec)
	return string(out), err
}

// typeDescription is an infer.Annotator that keeps what an enum's Annotate says about the type.
type typeDescription struct{ text string }

func (a *typeDescription) Describe(_ any, description string)        { a.text = description }
func (*typeDescription) SetDefault(any, any, ...string)              {}
func (*typeDescription) SetToken(tokens.ModuleName, tokens.TypeName) {}
func (*typeDescription) AddAlias(tokens.ModuleName, tokens.TypeName) {}
func (*typeDescription) Deprecate(any, string)                       {}
