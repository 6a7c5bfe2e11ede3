package talosapi

import (
	"context"
	"crypto/tls"
	"net"
	"testing"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	storageapi "github.com/siderolabs/talos/pkg/machinery/api/storage"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/types/known/emptypb"
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
}

func (secureMachine) Version(context.Context, *emptypb.Empty) (*machineapi.VersionResponse, error) {
	return &machineapi.VersionResponse{Messages: []*machineapi.Version{{Version: &machineapi.VersionInfo{Tag: "v1.12.5"}}}}, nil
}

// serve starts a gRPC server on a loopback port and returns its address.
func serve(t *testing.T, cfg *tls.Config, register func(*grpc.Server)) string {
	t.Helper()

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	s := grpc.NewServer(grpc.Creds(credentials.NewTLS(cfg)))
	register(s)

	go s.Serve(lis) //nolint:errcheck

	t.Cleanup(s.Stop)

	return lis.Addr().String()
}

func serveMaintenance(t *testing.T) string {
	self := newTestCA(t, "maintenance")

	return serve(t, serverTLS(t, self, nil), func(s *grpc.Server) {
		storageapi.RegisterStorageServiceServer(s, maintenanceStorage{})
		machineapi.RegisterMachineServiceServer(s, machineapi.UnimplementedMachineServiceServer{})
	})
}

func serveSecure(t *testing.T, osCA *testCA) string {
	return serve(t, serverTLS(t, osCA, osCA), func(s *grpc.Server) {
		machineapi.RegisterMachineServiceServer(s, secureMachine{})
	})
}

// closedAddr is a loopback address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	addr := lis.Addr().String()
	lis.Close() //nolint:errcheck

	return addr
}
