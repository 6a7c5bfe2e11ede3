package cluster

import "github.com/pulumi/pulumi/sdk/v3/go/pulumi"

// registerShallow registers a resource from a goroutine of its own, so that
// the call stack the Go SDK sends with the registration is a few frames,
// not Construct's whole stack. The SDK walks every frame of the stack that
// registers (pulumi sdk go/pulumi/context.go, Context.getStackTrace), makes
// each a source position, and the engine keeps them in the state
// (stackTrace): about 25 frames and 3 KB per child resource, a quarter of a
// 60-node stack's state, all of them the provider's own (pulumi-go-provider's
// middleware, gRPC), nothing of the user's program; a preview pays the walk
// and the encoding per child. The registration itself is the same call:
// the caller waits for it, so the order of registrations does not change.
func registerShallow(ctx *pulumi.Context, t, name string, props pulumi.Input, res pulumi.CustomResource, opts ...pulumi.ResourceOption) error {
	done := make(chan error, 1)
	go func() { done <- registerResource(ctx, t, name, props, res, opts...) }()
	return <-done
}

// registerResource is ctx.RegisterResource one frame below the goroutine's
// function: the SDK takes the registration's source position four frames
// above its own (the user's call of a generated constructor), which is then
// that function in this file rather than the runtime's goroutine exit.
func registerResource(ctx *pulumi.Context, t, name string, props pulumi.Input, res pulumi.CustomResource, opts ...pulumi.ResourceOption) error {
	return ctx.RegisterResource(t, name, props, res, opts...)
}
