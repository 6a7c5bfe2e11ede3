package talos

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/siderolabs/talos/pkg/machinery/constants"
	"github.com/siderolabs/talos/pkg/machinery/role"
)

// Role handling as in siderolabs/talos pkg/grpc/middleware/authz: apid reads
// roles from the client certificate's organizations (trusting metadata only
// from impersonators, i.e. other apids), passes them to machined in metadata,
// and machined authorizes each method against a rule table.

type rolesKey struct{}

func withRoles(ctx context.Context, roles role.Set) context.Context {
	return context.WithValue(ctx, rolesKey{}, roles)
}

func rolesFrom(ctx context.Context) role.Set {
	r, ok := ctx.Value(rolesKey{}).(role.Set)
	if !ok {
		return role.Zero
	}

	return r
}

func metadataRoles(ctx context.Context) (role.Set, bool) {
	md, _ := metadata.FromIncomingContext(ctx)

	vals := md.Get(constants.APIAuthzRoleMetadataKey)
	if len(vals) == 0 {
		return role.Zero, false
	}

	roles, _ := role.Parse(vals)

	return roles, true
}

// roleSource extracts the caller's roles.
type roleSource func(ctx context.Context) role.Set

// certRoles is apid's injector in "Enabled" mode.
func certRoles(ctx context.Context) role.Set {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return role.Zero
	}

	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.PeerCertificates) == 0 {
		return role.Zero
	}

	roles, _ := role.Parse(info.State.PeerCertificates[0].Subject.Organization)

	if roles.Includes(role.Impersonator) {
		if md, ok := metadataRoles(ctx); ok {
			return md
		}
	}

	return roles
}

// readerOnly is the maintenance service's injector ("ReadOnly...": every
// network peer is a reader).
func readerOnly(context.Context) role.Set { return role.MakeSet(role.Reader) }

// fromMetadata is machined's injector ("MetadataOnly").
func fromMetadata(ctx context.Context) role.Set {
	roles, _ := metadataRoles(ctx)

	return roles
}

func injectUnary(src roleSource) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		return h(withRoles(ctx, src(ctx)), req)
	}
}

func injectStream(src roleSource) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		return h(srv, &ctxStream{ServerStream: ss, ctx: withRoles(ss.Context(), src(ss.Context()))})
	}
}

type ctxStream struct {
	grpc.ServerStream
	ctx context.Context //nolint:containedctx
}

func (s *ctxStream) Context() context.Context { return s.ctx }

var errNotAuthorized = status.Error(codes.PermissionDenied, "not authorized")

func authorize(ctx context.Context, method string) error {
	allowed, ok := machinedRules[method]
	if !ok {
		allowed = role.MakeSet(role.Admin)
	}

	if !allowed.IncludesAny(rolesFrom(ctx)) {
		return errNotAuthorized
	}

	return nil
}

func authorizeUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := authorize(ctx, info.FullMethod); err != nil {
		return nil, err
	}

	return h(ctx, req)
}

func authorizeStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if err := authorize(ss.Context(), info.FullMethod); err != nil {
		return err
	}

	return h(srv, ss)
}

// machinedRules: which roles may call which method (a subset of
// internal/app/machined/pkg/system/services/machined.go's table, for the
// methods the simulator serves; others fall back to os:admin as there).
var machinedRules = func() map[string]role.Set {
	all := role.MakeSet(role.Admin, role.Operator, role.Reader)
	adminOp := role.MakeSet(role.Admin, role.Operator)
	admin := role.MakeSet(role.Admin)
	etcdRead := role.MakeSet(role.Admin, role.Operator, role.Reader, role.EtcdBackup)

	return map[string]role.Set{
		"/machine.MachineService/ApplyConfiguration":          admin,
		"/machine.MachineService/Bootstrap":                   admin,
		"/machine.MachineService/EtcdLeaveCluster":            admin,
		"/machine.MachineService/EtcdMemberList":              etcdRead,
		"/machine.MachineService/EtcdRemoveMemberByID":        admin,
		"/machine.MachineService/EtcdStatus":                  etcdRead,
		"/machine.MachineService/GenerateClientConfiguration": admin,
		"/machine.MachineService/Hostname":                    all,
		"/machine.MachineService/Kubeconfig":                  admin,
		"/machine.MachineService/Reboot":                      adminOp,
		"/machine.MachineService/Reset":                       admin,
		"/machine.MachineService/ServiceList":                 all,
		"/machine.MachineService/Shutdown":                    adminOp,
		"/machine.MachineService/Upgrade":                     admin,
		"/machine.MachineService/Version":                     all,
		"/storage.StorageService/Disks":                       all,
		"/cosi.resource.State/Get":                            all,
		"/cosi.resource.State/List":                           all,
		"/cosi.resource.State/Watch":                          all,
		"/cosi.resource.State/Create":                         admin,
		"/cosi.resource.State/Update":                         admin,
		"/cosi.resource.State/Destroy":                        admin,
	}
}()
