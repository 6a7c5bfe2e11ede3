package cluster

import (
	"context"
	"slices"
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	pschema "github.com/pulumi/pulumi/pkg/v3/codegen/schema"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// Every input the plan needs is plain in the schema, nested ones, list
// elements and map values included, so the SDKs refuse Outputs where the
// plan needs values; those that only reach the machine configurations
// (patches, manifests, mirrors, the CCM token secret) stay inputs.
func TestSchemaMarksComponentInputsPlain(t *testing.T) {
	t.Parallel()
	prov, err := infer.NewProviderBuilder().
		WithComponents(New()).
		WithModuleMap(map[tokens.ModuleName]tokens.ModuleName{"cluster": "index"}).
		Build()
	if err != nil {
		t.Fatal(err)
	}
	spec, err := p.GetSchema(context.Background(), "proxmoxtalos", "0.1.0", WithPlainInputs(prov))
	if err != nil {
		t.Fatal(err)
	}

	var notPlain, checked []string
	var check func(path string, ts *pschema.TypeSpec)
	seen := map[string]bool{}
	check = func(path string, ts *pschema.TypeSpec) {
		checked = append(checked, path)
		if !ts.Plain {
			notPlain = append(notPlain, path)
		}
		if ts.Items != nil {
			check(path+"[]", ts.Items)
		}
		if ts.AdditionalProperties != nil {
			check(path+"{}", ts.AdditionalProperties)
		}
		token, ok := strings.CutPrefix(ts.Ref, "#/types/")
		if !ok || seen[token] {
			return
		}
		seen[token] = true
		for name, prop := range spec.Types[token].Properties {
			check(path+"."+name, &prop.TypeSpec)
		}
	}
	res := spec.Resources[tokenComponent]
	if !res.IsComponent {
		t.Fatalf("%s is not a component in the schema", tokenComponent)
	}
	for name, prop := range res.InputProperties {
		check(name, &prop.TypeSpec)
	}
	// Paths are reported once per type (the first path that reaches it).
	// Only inputs that do not count or place nodes (the machine
	// configurations, the VMs' network settings) may be outputs; what the
	// plan needs stays plain.
	capable := map[string]bool{}
	for _, props := range outputCapable {
		for _, p := range props {
			capable[p] = true
		}
	}
	for _, path := range notPlain {
		name := strings.TrimRight(path, "[]{}")
		name = name[strings.LastIndex(name, ".")+1:]
		if !capable[name] && name != "tokenSecret" {
			t.Errorf("%s is not plain, but the plan needs it", path)
		}
	}
	for _, want := range []string{"patches[]", "nodePatches{}[]", "registryMirrors{}.endpoints[]", "extraManifests[]", "controlPlane.patches[]", "cloudControllerManager.proxmox.tokenSecret",
		"network.bridge", "network.vlan", "network.dnsServers[]", "network.searchDomain", "network.secondary.bridge"} {
		if !slices.Contains(notPlain, want) {
			t.Errorf("%s is plain: an output of another resource cannot feed it; not plain: %v", want, notPlain)
		}
	}
	if tok := spec.Types["proxmoxtalos:index:ProxmoxCloudControllerManager"].Properties["tokenSecret"]; !tok.Secret {
		t.Errorf("tokenSecret is not marked secret")
	}
	for _, want := range []string{"hosts[]", "workerPools[].dataDisks[].volume", "registryMirrors{}.endpoints[]", "nodePatches{}[]", "network.secondary.bridge"} {
		if !slices.Contains(checked, want) {
			t.Errorf("%s was not checked: %v", want, checked)
		}
	}
	// Outputs are untouched.
	if spec.Resources[tokenComponent].Properties["nodes"].Plain {
		t.Errorf("the nodes output became plain")
	}
}

// An input that is not known at construct time (an output of a resource
// not created yet) is refused with its path, instead of being planned as
// its zero value; the Proxmox CCM token secret may be unknown.
func TestConstructRefusesUnknownInputs(t *testing.T) {
	t.Parallel()
	unknown := presource.MakeComputed(presource.NewStringProperty(""))
	inv := &fakeInventory{hosts: threeHosts()}

	in := baseInputs()
	in["vip"] = unknown
	in["network"].(map[string]any)["subnet"] = unknown
	in["registryMirrors"] = map[string]any{"docker.io": map[string]any{"endpoints": []any{"https://m.example.com", unknown}}}
	rec, _, err := constructDry(t, true, inv, in)
	want := `TalosCluster lab: network.subnet, vip are not known yet`
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "must be a plain value") {
		t.Errorf("construct with unknown inputs: %v\nwant %q", err, want)
	}
	if len(rec.regs) > 0 {
		t.Errorf("resources registered: %v", rec.keys())
	}

	// The token secret may be unknown: it only reaches the machine
	// configurations, outputs anyway.
	in = baseInputs()
	in["cloudControllerManager"] = map[string]any{"proxmox": map[string]any{
		"url": "https://pve.example.com:8006/api2/json", "tokenId": "k8s@pve!ccm", "tokenSecret": unknown,
	}}
	if paths := unknownInputs(presource.FromResourcePropertyMap(presource.NewPropertyMapFromMap(in))); len(paths) > 0 {
		t.Errorf("an unknown Proxmox CCM token secret is refused: %v", paths)
	}
}

// WithPlainInputs is the provider with the component's two plain-input
// workarounds, as provider.New applies them.
func WithPlainInputs(prov p.Provider) p.Provider {
	return framework.WithSchemaFixes(framework.WithConstructGuards(prov, ConstructGuard()), PlainInputs())
}
