package talos

import (
	"strings"
	"testing"

	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// A TalosCluster's node has no reset input of its own: the advice names
// the state delete of its URN, which the provider learns from the request.
func TestDestroyAdviceFollowsTheURN(t *testing.T) {
	const child = presource.URN("urn:pulumi:s::p::proxmoxtalos:index:TalosCluster$proxmoxtalos:talos:ConfigurationApply::demo-cp-1")
	if got := destroyAdvice(framework.ContextWithURN(t.Context(), child)); !strings.Contains(got, "pulumi state delete '"+string(child)+"'") {
		t.Errorf("advice for a TalosCluster's node: %s", got)
	}
	const own = presource.URN("urn:pulumi:s::p::proxmoxtalos:talos:ConfigurationApply::n1")
	for _, ctx := range []struct {
		what string
		urn  presource.URN
	}{{"a resource of the user's own", own}, {"no URN", ""}} {
		if got := destroyAdvice(framework.ContextWithURN(t.Context(), ctx.urn)); !strings.Contains(got, "change reset") {
			t.Errorf("advice for %s: %s", ctx.what, got)
		}
	}
}
