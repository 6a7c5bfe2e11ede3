package talos

import (
	"context"
	"fmt"
	"strings"

	cosiv1alpha1 "github.com/cosi-project/runtime/api/v1alpha1"
	"github.com/cosi-project/runtime/pkg/resource"
	"github.com/cosi-project/runtime/pkg/resource/meta"
	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/cosi-project/runtime/pkg/state"
	"github.com/cosi-project/runtime/pkg/state/impl/inmem"
	"github.com/cosi-project/runtime/pkg/state/impl/namespaced"
	cosiserver "github.com/cosi-project/runtime/pkg/state/protobuf/server"
	"github.com/cosi-project/runtime/pkg/state/registry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/siderolabs/talos/pkg/machinery/role"
)

// newResourceState is a boot's resource state (COSI), served read-only over
// the API as Talos does. Namespaces and resource definitions are registered
// as machined registers them (cosi_registry.go), the meta namespace and the
// ResourceDefinition/Namespace types included, so `talosctl get <type>`
// resolves every type a real node knows.
func newResourceState() (state.State, error) {
	st := state.WrapCore(namespaced.NewState(inmem.Build))
	ctx := context.Background()

	namespaces := registry.NewNamespaceRegistry(st)
	resources := registry.NewResourceRegistry(st)

	if err := namespaces.RegisterDefault(ctx); err != nil {
		return nil, err
	}

	if err := resources.RegisterDefault(ctx); err != nil {
		return nil, err
	}

	for _, ns := range machinedNamespaces {
		if err := namespaces.Register(ctx, ns.name, ns.description); err != nil {
			return nil, err
		}
	}

	for _, r := range machinedResources {
		if err := resources.Register(ctx, r); err != nil {
			return nil, err
		}
	}

	return st, nil
}

// accessPolicy is Talos's COSI access rule over the API
// (internal/app/resources/access.go): read-only, known types and namespaces
// only, sensitive types (the machine config) for os:admin only.
func accessPolicy(st state.State) state.FilteringRule {
	return func(ctx context.Context, access state.Access) error {
		if !access.Verb.Readonly() {
			return status.Error(codes.PermissionDenied, "write access is not allowed")
		}

		rd, err := safe.StateGet[*meta.ResourceDefinition](ctx, st,
			resource.NewMetadata(meta.NamespaceName, meta.ResourceDefinitionType, strings.ToLower(access.ResourceType), resource.VersionUndefined))
		if err != nil {
			if state.IsNotFoundError(err) {
				return status.Error(codes.PermissionDenied, fmt.Sprintf("resource type %q is not supported", access.ResourceType))
			}

			return err
		}

		if rd.TypedSpec().Sensitivity == meta.Sensitive && !rolesFrom(ctx).Includes(role.Admin) {
			return errNotAuthorized
		}

		if _, err := safe.StateGet[*meta.Namespace](ctx, st,
			resource.NewMetadata(meta.NamespaceName, meta.NamespaceType, access.ResourceNamespace, resource.VersionUndefined)); err != nil {
			if state.IsNotFoundError(err) {
				return status.Error(codes.PermissionDenied, fmt.Sprintf("namespace %q is not supported", access.ResourceNamespace))
			}

			return err
		}

		return nil
	}
}

func registerResources(srv *grpc.Server, st state.State) {
	filtered := state.WrapCore(state.Filter(st, accessPolicy(st)))
	cosiv1alpha1.RegisterStateServer(srv, cosiserver.NewState(filtered))
}

// upsert creates or replaces a resource.
func upsert(ctx context.Context, st state.State, r resource.Resource) error {
	_, err := upsertChanged(ctx, st, r)

	return err
}

// upsertChanged creates or replaces a resource and reports whether it
// changed. A controller's Modify writes only when something changed, so a
// resource's version moves only with its content.
func upsertChanged(ctx context.Context, st state.State, r resource.Resource) (bool, error) {
	cur, err := st.Get(ctx, r.Metadata())

	switch {
	case state.IsNotFoundError(err):
		return true, st.Create(ctx, r)
	case err != nil:
		return false, err
	}

	r.Metadata().SetVersion(cur.Metadata().Version())

	if resource.Equal(cur, r) {
		return false, nil
	}

	return true, st.Update(ctx, r)
}

// replaceAll makes the resources of one type in one namespace exactly want:
// each upserted, any other destroyed (a controller cleaning up its outputs).
func replaceAll[T resource.Resource](ctx context.Context, st state.State, kind resource.Kind, want []T) error {
	keep := map[resource.ID]bool{}

	for _, r := range want {
		keep[r.Metadata().ID()] = true

		if err := upsert(ctx, st, r); err != nil {
			return err
		}
	}

	list, err := st.List(ctx, kind)
	if err != nil {
		return err
	}

	for _, r := range list.Items {
		if !keep[r.Metadata().ID()] {
			if err := destroyIfExists(ctx, st, r.Metadata()); err != nil {
				return err
			}
		}
	}

	return nil
}

func destroyIfExists(ctx context.Context, st state.State, md resource.Pointer) error {
	err := st.Destroy(ctx, md)
	if err != nil && !state.IsNotFoundError(err) {
		return err
	}

	return nil
}
