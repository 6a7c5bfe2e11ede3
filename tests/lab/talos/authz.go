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

// machinedRules: which roles may call which method, machined's table
// (internal/app/machined/pkg/system/services/machined.go, v1.12.5); methods
// not listed need os:admin, as there.
var machinedRules = map[string]role.Set{
	"/cluster.ClusterService/HealthCheck":                   role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/inspect.InspectService/ControllerRuntimeDependencies": role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/machine.MachineService/ApplyConfiguration":            role.MakeSet(role.Admin),
	"/machine.MachineService/Bootstrap":                     role.MakeSet(role.Admin),
	"/machine.MachineService/CPUInfo":                       role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/machine.MachineService/CPUFreqStats":                  role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/machine.MachineService/Containers":                    role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/machine.MachineService/Copy":                          role.MakeSet(role.Admin),
	"/machine.MachineService/DiskStats":                     role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/machine.MachineService/DiskUsage":                     role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/machine.MachineService/Dmesg":                         role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/machine.MachineService/EtcdAlarmList":                 role.MakeSet(role.Admin, role.Operator, role.Reader, role.EtcdBackup),
	"/machine.MachineService/EtcdAlarmDisarm":               role.MakeSet(role.Admin, role.Operator),
	"/machine.MachineService/EtcdDefragment":                role.MakeSet(role.Admin, role.Operator),
	"/machine.MachineService/EtcdForfeitLeadership":         role.MakeSet(role.Admin),
	"/machine.MachineService/EtcdLeaveCluster":              role.MakeSet(role.Admin),
	"/machine.MachineService/EtcdMemberList":                role.MakeSet(role.Admin, role.Operator, role.Reader, role.EtcdBackup),
	"/machine.MachineService/EtcdRecover":                   role.MakeSet(role.Admin),
	"/machine.MachineService/EtcdRemoveMemberByID":          role.MakeSet(role.Admin),
	"/machine.MachineService/EtcdSnapshot":                  role.MakeSet(role.Admin, role.Operator, role.EtcdBackup),
	"/machine.MachineService/EtcdStatus":                    role.MakeSet(role.Admin, role.Operator, role.Reader, role.EtcdBackup),
	"/machine.MachineService/EtcdDowngradeCancel":           role.MakeSet(role.Admin),
	"/machine.MachineService/EtcdDowngradeEnable":           role.MakeSet(role.Admin),
	"/machine.MachineService/EtcdDowngradeValidate":         role.MakeSet(role.Admin),
	"/machine.MachineService/Events":                        role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/machine.MachineService/GenerateClientConfiguration":   role.MakeSet(role.Admin),
	"/machine.MachineService/GenerateConfiguration":         role.MakeSet(role.Admin),
	"/machine.MachineService/Hostname":                      role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/machine.MachineService/ImageList":                     role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/machine.MachineService/ImagePull":                     role.MakeSet(role.Admin, role.Operator),
	"/machine.MachineService/Kubeconfig":                    role.MakeSet(role.Admin),
	"/machine.MachineService/List":                          role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/machine.MachineService/LoadAvg":                       role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/machine.MachineService/Logs":                          role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/machine.MachineService/LogsContainers":                role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/machine.MachineService/Memory":                        role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/machine.MachineService/MetaWrite":                     role.MakeSet(role.Admin),
	"/machine.MachineService/MetaDelete":                    role.MakeSet(role.Admin),
	"/machine.MachineService/Mounts":                        role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/machine.MachineService/NetworkDeviceStats":            role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/machine.MachineService/Netstat":                       role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/machine.MachineService/PacketCapture":                 role.MakeSet(role.Admin, role.Operator),
	"/machine.MachineService/Processes":                     role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/machine.MachineService/Read":                          role.MakeSet(role.Admin),
	"/machine.MachineService/Reboot":                        role.MakeSet(role.Admin, role.Operator),
	"/machine.MachineService/Reset":                         role.MakeSet(role.Admin),
	"/machine.MachineService/Restart":                       role.MakeSet(role.Admin, role.Operator),
	"/machine.MachineService/Rollback":                      role.MakeSet(role.Admin),
	"/machine.MachineService/ServiceList":                   role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/machine.MachineService/ServiceRestart":                role.MakeSet(role.Admin, role.Operator),
	"/machine.MachineService/ServiceStart":                  role.MakeSet(role.Admin, role.Operator),
	"/machine.MachineService/ServiceStop":                   role.MakeSet(role.Admin, role.Operator),
	"/machine.MachineService/Shutdown":                      role.MakeSet(role.Admin, role.Operator),
	"/machine.MachineService/Stats":                         role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/machine.MachineService/SystemStat":                    role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/machine.MachineService/Upgrade":                       role.MakeSet(role.Admin),
	"/machine.MachineService/Version":                       role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/cosi.resource.State/Create":                           role.MakeSet(role.Admin),
	"/cosi.resource.State/Destroy":                          role.MakeSet(role.Admin),
	"/cosi.resource.State/Get":                              role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/cosi.resource.State/List":                             role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/cosi.resource.State/Update":                           role.MakeSet(role.Admin),
	"/cosi.resource.State/Watch":                            role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/storage.StorageService/Disks":                         role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/storage.StorageService/BlockDeviceWipe":               role.MakeSet(role.Admin),
	"/time.TimeService/Time":                                role.MakeSet(role.Admin, role.Operator, role.Reader),
	"/time.TimeService/TimeCheck":                           role.MakeSet(role.Admin, role.Operator, role.Reader),
}
