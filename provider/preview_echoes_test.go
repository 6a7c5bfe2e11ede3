package provider

import (
	"testing"

	"github.com/blang/semver"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/integration"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

// A TalosCluster's VM's preview Create returns what the component reads
// (vmId, smbiosUuid) and none of the copies of its inputs, its nested
// objects first; the same VM created by the program itself keeps them all.
func TestClusterVMPreviewCreateHasNoInputCopies(t *testing.T) {
	prov, err := New()
	if err != nil {
		t.Fatal(err)
	}
	s, err := integration.NewServer(t.Context(), Name, semver.MustParse("1.0.0"), integration.WithProvider(prov))
	if err != nil {
		t.Fatal(err)
	}
	inputs := property.NewMap(map[string]property.Value{
		"node": property.New("pve1"),
		"name": property.New("demo-cp-1"),
		"cpu":  property.New(property.NewMap(map[string]property.Value{"cores": property.New(2.0)})),
		"tags": property.New(property.NewArray([]property.Value{property.New("cluster-demo")})),
	})
	create := func(urn presource.URN) property.Map {
		t.Helper()
		resp, err := s.Create(p.CreateRequest{Urn: urn, Properties: inputs, DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Properties
	}
	child := create("urn:pulumi:s::p::proxmoxtalos:index:TalosCluster$proxmoxtalos:proxmox:VirtualMachine::demo-cp-1")
	for _, k := range []string{"node", "name", "cpu", "tags"} {
		if _, ok := child.GetOk(k); ok {
			t.Errorf("the cluster VM's preview outputs repeat its input %s: %v", k, child)
		}
	}
	for _, k := range []string{"vmId", "smbiosUuid"} {
		if v, ok := child.GetOk(k); !ok || !v.IsComputed() {
			t.Errorf("the cluster VM's preview outputs lack %s (unknown), which the component reads: %v", k, child)
		}
	}
	own := create("urn:pulumi:s::p::proxmoxtalos:proxmox:VirtualMachine::mine")
	for _, k := range []string{"node", "name", "cpu", "tags"} {
		if v, ok := own.GetOk(k); !ok || !v.Equals(inputs.Get(k)) {
			t.Errorf("a program's own VM's preview output %s = %v, want its input %v", k, v, inputs.Get(k))
		}
	}
}
