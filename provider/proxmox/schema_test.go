package proxmox_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/blang/semver"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/integration"

	"github.com/proxmoxtalos/proxmoxtalos/provider"
)

type schemaProp struct {
	Description string `json:"description"`
	Ref         string `json:"$ref"`
	Items       *struct {
		Ref string `json:"$ref"`
	} `json:"items"`
}

type schemaObj struct {
	Description     string                `json:"description"`
	Properties      map[string]schemaProp `json:"properties"`
	InputProperties map[string]schemaProp `json:"inputProperties"`
	Enum            []json.RawMessage     `json:"enum"`
}

// Every resource, input, output and type of the proxmox module is described
// (the SDKs' documentation comes from here), and one-of-a-set values are enums.
func TestProxmoxSchemaIsDocumented(t *testing.T) {
	t.Parallel()
	prov, err := provider.New()
	if err != nil {
		t.Fatal(err)
	}
	s, err := integration.NewServer(context.Background(), provider.Name, semver.MustParse("1.0.0"), integration.WithProvider(prov))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.GetSchema(p.GetSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var sch struct {
		Resources map[string]schemaObj `json:"resources"`
		Types     map[string]schemaObj `json:"types"`
	}
	if err := json.Unmarshal([]byte(resp.Schema), &sch); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"proxmoxtalos:proxmox:VirtualMachine", "proxmoxtalos:proxmox:DownloadFile"} {
		res, ok := sch.Resources[r]
		if !ok {
			t.Fatalf("%s missing", r)
		}
		if !strings.Contains(res.Description, "## Example") {
			t.Errorf("%s has no example in its description", r)
		}
		for name, prop := range res.InputProperties {
			if prop.Description == "" {
				t.Errorf("%s input %s has no description", r, name)
			}
		}
		for name, prop := range res.Properties {
			if prop.Description == "" {
				t.Errorf("%s output %s has no description", r, name)
			}
		}
	}
	enums := 0
	for tok, typ := range sch.Types {
		if !strings.HasPrefix(tok, "proxmoxtalos:proxmox:") {
			continue
		}
		if len(typ.Enum) > 0 {
			enums++
			continue
		}
		for name, prop := range typ.Properties {
			if prop.Description == "" {
				t.Errorf("type %s property %s has no description", tok, name)
			}
		}
	}
	vm := sch.Resources["proxmoxtalos:proxmox:VirtualMachine"].InputProperties
	for _, k := range []string{"bios", "scsiHardware", "osType"} {
		if !strings.HasSuffix(vm[k].Ref, "#/types/proxmoxtalos:proxmox:"+strings.ToUpper(k[:1])+k[1:]) {
			t.Errorf("%s is not an enum: %+v", k, vm[k])
		}
	}
	if enums < 8 {
		t.Errorf("only %d enums in the proxmox module", enums)
	}
}
