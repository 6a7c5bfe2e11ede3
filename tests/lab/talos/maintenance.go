package talos

import (
	"context"
	"fmt"
	"strings"

	"github.com/blang/semver/v4"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/api/storage"
	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/role"
)

// maintenanceServer is the MachineService of maintenance mode
// (siderolabs/talos internal/app/maintenance/server.go): it takes a config
// (AUTO, REBOOT or TRY), and refuses what needs an installed, configured node.
type maintenanceServer struct {
	machine.UnimplementedMachineServiceServer

	node *Node
}

func (m *maintenanceServer) ApplyConfiguration(ctx context.Context, in *machine.ApplyConfigurationRequest) (*machine.ApplyConfigurationResponse, error) {
	switch in.Mode { //nolint:exhaustive
	case machine.ApplyConfigurationRequest_TRY, machine.ApplyConfigurationRequest_REBOOT, machine.ApplyConfigurationRequest_AUTO:
	default:
		return nil, status.Errorf(codes.Unimplemented, "apply configuration --mode='%s' is not supported in maintenance mode",
			strings.ReplaceAll(strings.ToLower(in.Mode.String()), "_", "-"))
	}

	if err := checkConfigKnown(in.GetData(), m.node.runningVersion()); err != nil {
		return nil, fmt.Errorf("failed to parse config: %w", err)
	}

	cfg, err := configloader.NewFromBytes(in.GetData())
	if err != nil {
		return nil, fmt.Errorf("failed to parse config: %w", err)
	}

	mode := m.node.validationMode()

	warnings, err := cfg.Validate(mode)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "configuration validation failed: %s", err)
	}

	runtimeWarnings, err := m.node.runtimeValidate(ctx, cfg, mode)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "runtime configuration validation failed: %s", err)
	}

	reply := &machine.ApplyConfigurationResponse{Messages: []*machine.ApplyConfiguration{{
		Warnings: append(warnings, runtimeWarnings...),
	}}}

	if in.DryRun {
		reply.Messages[0].ModeDetails = "Dry run summary:\nNode is running in maintenance mode and does not have a config yet."

		return reply, nil
	}

	select {
	case m.node.applyCh <- appliedConfig{cfg: cfg, bytes: in.GetData()}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}

	m.node.logf("machine configuration received in maintenance mode")

	return reply, nil
}

func (m *maintenanceServer) GenerateClientConfiguration(context.Context, *machine.GenerateClientConfigurationRequest) (*machine.GenerateClientConfigurationResponse, error) {
	return nil, status.Error(codes.Unimplemented, "client configuration (talosconfig) can't be generated in the maintenance mode")
}

// Version needs the admin role up to Talos 1.12, which network peers never
// have in maintenance mode. From 1.13 on, maintenance mode is machined's own
// API behind apid in read-only role mode (controllers/runtime/
// api_service_config.go, v1.13.0), where readers may ask for the version;
// without a config there are no features.
func (m *maintenanceServer) Version(ctx context.Context, _ *emptypb.Empty) (*machine.VersionResponse, error) {
	if v, err := semver.ParseTolerant(m.node.runningVersion()); err == nil && v.GTE(semver.MustParse("1.13.0-alpha.3")) {
		reply := m.node.version()
		reply.Messages[0].Features = nil

		return reply, nil
	}

	return nil, assertAdmin(ctx)
}

// Upgrade, Reset, MetaWrite need the admin role, which network peers never
// have in maintenance mode.

func (m *maintenanceServer) Upgrade(ctx context.Context, _ *machine.UpgradeRequest) (*machine.UpgradeResponse, error) {
	return nil, assertAdmin(ctx)
}

func (m *maintenanceServer) Reset(ctx context.Context, _ *machine.ResetRequest) (*machine.ResetResponse, error) {
	return nil, assertAdmin(ctx)
}

func (m *maintenanceServer) MetaWrite(ctx context.Context, _ *machine.MetaWriteRequest) (*machine.MetaWriteResponse, error) {
	return nil, assertAdmin(ctx)
}

func (m *maintenanceServer) MetaDelete(ctx context.Context, _ *machine.MetaDeleteRequest) (*machine.MetaDeleteResponse, error) {
	return nil, assertAdmin(ctx)
}

// assertAdmin: only SideroLink peers get the admin role in maintenance mode,
// and the lab has none, so these calls always end here.
func assertAdmin(ctx context.Context) error {
	if hasRole(ctx, role.Admin) {
		return status.Error(codes.Internal, "simulator: admin role in maintenance mode is not modelled")
	}

	return status.Error(codes.Unimplemented, "API is not implemented in maintenance mode")
}

// storageServer serves Disks from the VM's disks, in maintenance and
// configured mode (internal/app/storaged/server.go).
type storageServer struct {
	storage.UnimplementedStorageServiceServer

	node *Node
}

func (st *storageServer) Disks(context.Context, *emptypb.Empty) (*storage.DisksResponse, error) {
	s := st.node.sim

	s.mu.Lock()
	devs, err := linuxDevices(st.node.machine.Disks)

	systemDisk := ""
	if st.node.ps != nil {
		systemDisk = st.node.ps.disk
	}
	s.mu.Unlock()

	if err != nil {
		return nil, err
	}

	disks := make([]*storage.Disk, 0, len(devs))

	for _, d := range devs {
		typ := storage.Disk_HDD
		if d.SSD {
			typ = storage.Disk_SSD
		}

		disk := &storage.Disk{
			DeviceName: "/dev/" + d.DevName,
			Size:       d.SizeBytes,
			Type:       typ,
			SystemDisk: systemDisk != "" && d.Name == systemDisk,
			Subsystem:  "/sys/class/block",
		}

		if d.Transport == "virtio" {
			disk.Modalias = "virtio:d00000002v00001AF4"
			disk.BusPath = "/pci0000:00/0000:00:0a.0/virtio2"
		} else {
			disk.Model = "QEMU HARDDISK"
			disk.Serial = "drive-" + d.Name
			disk.Modalias = "scsi:t-0x00"
			disk.BusPath = "/pci0000:00/0000:00:05.0/0000:01:01.0/virtio1/host2/target2:0:0/2:0:0:0"
		}

		disks = append(disks, disk)
	}

	return &storage.DisksResponse{Messages: []*storage.Disks{{Disks: disks}}}, nil
}

func loadConfig(b []byte) (config.Provider, error) {
	return configloader.NewFromBytes(b)
}
