package cluster

import (
	"context"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// A construct's children are registered for PreviewEchoes under the URNs
// the engine gives them: the parent's whole type chain, none for the
// stack; the same name under another chain is not.
func TestChildURNsRegisteredForPreviewEchoes(t *testing.T) {
	const vm = "$proxmoxtalos:proxmox:VirtualMachine::"
	for _, c := range []struct {
		what, parent, name, want string
	}{
		{"a top-level cluster", "urn:pulumi:s::p::pulumi:pulumi:Stack::p-s", "top-cp-1",
			"urn:pulumi:s::p::proxmoxtalos:index:TalosCluster" + vm + "top-cp-1"},
		{"a cluster two components deep", "urn:pulumi:s::p::a:b:Outer$a:b:Mid::m", "deep-cp-1",
			"urn:pulumi:s::p::a:b:Outer$a:b:Mid$proxmoxtalos:index:TalosCluster" + vm + "deep-cp-1"},
	} {
		req := p.ConstructRequest{
			// as pulumi-go-provider v1.5.0 makes it: the parent's last type only
			Urn:    presource.URN("urn:pulumi:s::p::" + presource.URN(c.parent).Type().String() + "$" + tokenComponent + "::demo"),
			Parent: presource.URN(c.parent),
		}
		registerEcho(withComponentURN(context.Background(), req), tokenVirtualMachine, c.name)
		if !framework.EchoRegistered(presource.URN(c.want)) {
			t.Errorf("%s: %s not registered", c.what, c.want)
		}
	}
	if u := presource.URN("urn:pulumi:s::p::a:b:Mid$proxmoxtalos:index:TalosCluster" + vm + "deep-cp-1"); framework.EchoRegistered(u) {
		t.Errorf("%s registered: the component's URN lost its parent's chain", u)
	}
	registerEcho(context.Background(), tokenVirtualMachine, "outside")
	if u := presource.URN("urn:pulumi:s::p::proxmoxtalos:index:TalosCluster" + vm + "outside"); framework.EchoRegistered(u) {
		t.Errorf("a registration outside a construct registered %s", u)
	}
}
