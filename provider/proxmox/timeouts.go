package proxmox

import (
	"context"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
)

// WithTimeouts hands Pulumi's customTimeouts (create, update, delete) to the
// resources as context deadlines. infer's request types do not carry the
// timeout, so without this the resources could only use their defaults.
func WithTimeouts(prov p.Provider) p.Provider {
	create, update, del := prov.Create, prov.Update, prov.Delete
	prov.Create = func(ctx context.Context, req p.CreateRequest) (p.CreateResponse, error) {
		ctx, cancel := withSeconds(ctx, req.Timeout)
		defer cancel()
		return create(ctx, req)
	}
	prov.Update = func(ctx context.Context, req p.UpdateRequest) (p.UpdateResponse, error) {
		ctx, cancel := withSeconds(ctx, req.Timeout)
		defer cancel()
		return update(ctx, req)
	}
	prov.Delete = func(ctx context.Context, req p.DeleteRequest) error {
		ctx, cancel := withSeconds(ctx, req.Timeout)
		defer cancel()
		return del(ctx, req)
	}
	return prov
}

func withSeconds(ctx context.Context, seconds float64) (context.Context, context.CancelFunc) {
	if seconds <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, time.Duration(seconds*float64(time.Second)))
}
