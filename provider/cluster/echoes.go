package cluster

import (
	"context"

	p "github.com/pulumi/pulumi-go-provider"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"

	"github.com/proxmoxtalos/proxmoxtalos/provider/framework"
)

// The component's children's preview Creates return no copies of their
// inputs, of which it reads none (childOutputs, framework.PreviewEchoes):
// registerChild registers each child's URN with framework.RegisterEcho,
// computed from the construct's URN as the engine computes it. A resource
// the program itself parents to the component is never registered there,
// and keeps every output.

type componentURNKey struct{}

// withComponentURN is ctx carrying the URN of the component req constructs.
func withComponentURN(ctx context.Context, req p.ConstructRequest) context.Context {
	return context.WithValue(ctx, componentURNKey{}, componentURN(req))
}

// componentURN is the URN the engine gave the component: its parent's
// whole type chain, unless the parent is the stack (pulumi pkg
// resource/deploy/deployment.go generateURN). pulumi-go-provider v1.5.0's
// req.Urn takes only the parent's last type (provider.go
// newConstructRequest), which differs for a component nested two deep.
func componentURN(req p.ConstructRequest) presource.URN {
	var parent tokens.Type
	if req.Parent != "" {
		parent = req.Parent.QualifiedType()
	}
	return presource.NewURN(req.Urn.Stack(), req.Urn.Project(), parent, req.Urn.Type(), req.Urn.Name())
}

// registerEcho registers the URN of the component's child token/name, if
// ctx is a construct's (withComponentURN).
func registerEcho(ctx context.Context, token, name string) {
	comp, _ := ctx.Value(componentURNKey{}).(presource.URN)
	if comp == "" {
		return
	}
	framework.RegisterEcho(presource.NewURN(comp.Stack(), comp.Project(), comp.QualifiedType(), tokens.Type(token), name))
}
