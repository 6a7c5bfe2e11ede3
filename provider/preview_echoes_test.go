package provider

import (
	"testing"

	"github.com/blang/semver"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/integration"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// A TalosCluster's VM's preview Create returns what the component reads
// (vmId, smbiosUuid) and none of the copies of its inputs, its nested
// objects first; a VM the program creates itself keeps them all, also one
// it parents to the cluster, and so does the cluster's own VM once the
// provider is configured with fullPreviewOutputs.
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
	keepsAll := func(what string, out property.Map) {
		t.Helper()
		for _, k := range []string{"node", "name", "cpu", "tags"} {
			if v, ok := out.GetOk(k); !ok || !v.Equals(inputs.Get(k)) {
				t.Errorf("%s: preview output %s = %v, want its input %v", what, k, v, inputs.Get(k))
			}
		}
	}
	const vm = "urn:pulumi:s::p::proxmoxtalos:index:TalosCluster$proxmoxtalos:proxmox:VirtualMachine::"
	framework.RegisterEcho(vm + "demo-cp-1") // as the component registers its VM
	child := create(vm + "demo-cp-1")
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
	keepsAll("a program's own VM", create("urn:pulumi:s::p::proxmoxtalos:proxmox:VirtualMachine::mine"))
	keepsAll("a program's own VM parented to the cluster", create(vm+"extra"))

	configure := func(full bool) {
		t.Helper()
		if err := s.Configure(p.ConfigureRequest{Args: property.NewMap(map[string]property.Value{
			"fullPreviewOutputs": property.New(full),
		})}); err != nil {
			t.Fatal(err)
		}
	}
	configure(true)
	t.Cleanup(func() { configure(false) })
	keepsAll("the cluster VM with fullPreviewOutputs", create(vm+"demo-cp-1"))
}
