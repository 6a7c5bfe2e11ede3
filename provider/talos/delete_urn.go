package talos

import (
	"context"

	p "github.com/pulumi/pulumi-go-provider"
)

// deleteURNKey carries a deleted resource's URN to its Delete, which infer
// does not pass on: an error's advice depends on whether the resource is a
// TalosCluster's child (whose user has none of its inputs).
type deleteURNKey struct{}

// WithDeleteURN hands every Delete the resource's URN (see deleteURN).
func WithDeleteURN(prov p.Provider) p.Provider {
	inner := prov.Delete
	if inner == nil {
		return prov
	}

	prov.Delete = func(ctx context.Context, req p.DeleteRequest) error {
		return inner(context.WithValue(ctx, deleteURNKey{}, string(req.Urn)), req)
	}

	return prov
}

// deleteURN is the URN of the resource being deleted, "" when not known.
func deleteURN(ctx context.Context) string {
	urn, _ := ctx.Value(deleteURNKey{}).(string)

	return urn
}
