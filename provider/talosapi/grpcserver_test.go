package talosapi

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/api/common"
	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	storageapi "github.com/siderolabs/talos/pkg/machinery/api/storage"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/proxmoxtalos/proxmoxtalos/provider/internal/closedport"
)

// These tiny servers stand in for the two TLS listeners a Talos node can
// have, only to test how a client tells them apart. Their TLS rules are
// Talos's: maintenance mode serves a self-signed certificate and asks for no
// client certificate (internal/app/maintenance/provider.go, tls.ServerOnly);
// apid requires a client certificate from the OS CA (tls.Mutual).

type maintenanceStorage struct {
	storageapi.UnimplementedStorageServiceServer
}

func (maintenanceStorage) Disks(context.Context, *emptypb.Empty) (*storageapi.DisksResponse, error) {
	return &storageapi.DisksResponse{Messages: []*storageapi.Disks{{Disks: []*storageapi.Disk{{DeviceName: "/dev/sda", Size: 10 << 30}}}}}, nil
}

type secureMachine struct {
	machineapi.UnimplementedMachineServiceServer

	mu sync.Mutex
	// bootstrapAnswers are returned by Bootstrap in turn; the last repeats.
	bootstrapAnswers []error
	bootstrapCalls   int
	// kubeconfigStream is sent by Kubeconfig as one data message.
	kubeconfigStream []byte
	// nodeSeen records the "node" metadata of the last call.
	nodeSeen []string
}

func (m *secureMachine) Bootstrap(ctx context.Context, _ *machineapi.BootstrapRequest) (*machineapi.BootstrapResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()

	m.recordNode(ctx)

	i := min(m.bootstrapCalls, len(m.bootstrapAnswers)-1)
	m.bootstrapCalls++

	if i >= 0 && m.bootstrapAnswers[i] != nil {
		return nil, m.bootstrapAnswers[i]
	}

	return &machineapi.BootstrapResponse{Messages: []*machineapi.Bootstrap{{}}}, nil
}

func (m *secureMachine) Kubeconfig(_ *emptypb.Empty, srv grpc.ServerStreamingServer[common.Data]) error {
	return srv.Send(&common.Data{Bytes: m.kubeconfigStream})
}

func (m *secureMachine) recordNode(ctx context.Context) {
	md, _ := metadata.FromIncomingContext(ctx)
	m.nodeSeen = md.Get("node")
}

func (m *secureMachine) calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()

	return m.bootstrapCalls
}

func (*secureMachine) Version(context.Context, *emptypb.Empty) (*machineapi.VersionResponse, error) {
	return &machineapi.VersionResponse{Messages: []*machineapi.Version{{Version: &machineapi.VersionInfo{Tag: "v1.12.5"}}}}, nil
}

// serve starts a gRPC server on a loopback port and returns its address.
func serve(t *testing.T, cfg *tls.Config, register func(*grpc.Server)) string {
	addr, _ := serveCounted(t, cfg, register)

	return addr
}

// serveCounted is serve that also counts the connections the server
// accepted (each a TLS handshake).
func serveCounted(t *testing.T, cfg *tls.Config, register func(*grpc.Server)) (string, *atomic.Int32) {
	t.Helper()

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	s := grpc.NewServer(grpc.Creds(credentials.NewTLS(cfg)))
	register(s)

	counted := &countingListener{Listener: lis}

	go s.Serve(counted) //nolint:errcheck

	t.Cleanup(s.Stop)

	return lis.Addr().String(), &counted.accepted
}

// countingListener counts the connections it accepted.
type countingListener struct {
	net.Listener
	accepted atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}

	return c, err
}

// applyRecorder answers ApplyConfiguration with a fixed error (or OK) and
// records the modes it was sent.
type applyRecorder struct {
	machineapi.UnimplementedMachineServiceServer

	mu    sync.Mutex
	modes []machineapi.ApplyConfigurationRequest_Mode
	err   error
}

func (r *applyRecorder) ApplyConfiguration(_ context.Context, in *machineapi.ApplyConfigurationRequest) (*machineapi.ApplyConfigurationResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()

	r.modes = append(r.modes, in.GetMode())
	if r.err != nil {
		return nil, r.err
	}

	return &machineapi.ApplyConfigurationResponse{Messages: []*machineapi.ApplyConfiguration{{}}}, nil
}

func (r *applyRecorder) sent() []machineapi.ApplyConfigurationRequest_Mode {
	r.mu.Lock()
	defer r.mu.Unlock()

	return append([]machineapi.ApplyConfigurationRequest_Mode(nil), r.modes...)
}

func serveMaintenance(t *testing.T) string {
	addr, _ := serveMaintenanceRecorder(t, nil)

	return addr
}

func serveMaintenanceRecorder(t *testing.T, applyErr error) (string, *applyRecorder) {
	self := newTestCA(t, "maintenance")
	rec := &applyRecorder{err: applyErr}

	return serve(t, serverTLS(t, self, nil), func(s *grpc.Server) {
		storageapi.RegisterStorageServiceServer(s, maintenanceStorage{})
		machineapi.RegisterMachineServiceServer(s, rec)
	}), rec
}

func serveSecure(t *testing.T, osCA *testCA) string {
	addr, _ := serveSecureMachine(t, osCA, &secureMachine{})

	return addr
}

func serveSecureMachine(t *testing.T, osCA *testCA, m *secureMachine) (string, *secureMachine) {
	return serve(t, serverTLS(t, osCA, osCA), func(s *grpc.Server) {
		machineapi.RegisterMachineServiceServer(s, m)
	}), m
}

// closedAddr is a loopback address where connections are refused.
func closedAddr(t *testing.T) string {
	t.Helper()

	return closedport.Addr(t, "127.0.0.77")
}
