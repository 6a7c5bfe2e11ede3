package talos

import (
	"context"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/siderolabs/talos/pkg/machinery/api/common"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/api/storage"
	timeapi "github.com/siderolabs/talos/pkg/machinery/api/time"
	"github.com/siderolabs/talos/pkg/machinery/config"
)

// machined is the MachineService of a configured node
// (internal/app/machined/internal/server/v1alpha1/v1alpha1_server.go),
// reached through apid.
type machined struct {
	machine.UnimplementedMachineServiceServer

	node *Node
}

func registerMachined(srv *grpc.Server, n *Node) {
	machine.RegisterMachineServiceServer(srv, &machined{node: n})
	storage.RegisterStorageServiceServer(srv, &storageServer{node: n})
	timeapi.RegisterTimeServiceServer(srv, &timeServer{node: n})
	registerClusterService(srv, n)

	n.sim.mu.Lock()
	st := n.servers.state
	n.sim.mu.Unlock()

	registerResources(srv, st)
}

// current returns the node's active config, or an error when the node is
// on its way down.
func (m *machined) current() (config.Provider, error) {
	m.node.sim.mu.Lock()
	defer m.node.sim.mu.Unlock()

	if m.node.active == nil || m.node.phase != PhaseRunning {
		return nil, status.Error(codes.Unavailable, "node is not running")
	}

	return m.node.active, nil
}

// checkControlplane is machined's guard for control-plane-only APIs.
func checkControlplane(cfg config.Provider, api string) error {
	if !isControlPlane(cfg) {
		return status.Errorf(codes.Unimplemented, "%s is only available on control plane nodes", api)
	}

	return nil
}

func (m *machined) Version(context.Context, *emptypb.Empty) (*machine.VersionResponse, error) {
	return m.node.version(), nil
}

// version is what the Version API reports about the running image.
func (n *Node) version() *machine.VersionResponse {
	n.sim.mu.Lock()
	img := n.image
	n.sim.mu.Unlock()

	mode := validationMode{platform: img.Platform}.String()

	return &machine.VersionResponse{Messages: []*machine.Version{{
		Version: &machine.VersionInfo{
			Tag:       img.Version,
			Sha:       "simulated",
			Built:     "",
			GoVersion: "go1.25.0",
			Os:        "linux",
			Arch:      "amd64",
		},
		Platform: &machine.PlatformInfo{Name: img.Platform, Mode: mode},
		Features: &machine.FeaturesInfo{Rbac: true},
	}}}
}

func (m *machined) Hostname(context.Context, *emptypb.Empty) (*machine.HostnameResponse, error) {
	m.node.sim.mu.Lock()
	defer m.node.sim.mu.Unlock()

	return &machine.HostnameResponse{Messages: []*machine.Hostname{{Hostname: m.node.hostname}}}, nil
}

func (m *machined) ServiceList(context.Context, *emptypb.Empty) (*machine.ServiceListResponse, error) {
	s := m.node.sim

	s.mu.Lock()
	services := s.nodeServices(m.node)
	s.mu.Unlock()

	list := &machine.ServiceList{}
	for _, svc := range services {
		list.Services = append(list.Services, svc.proto())
	}

	return &machine.ServiceListResponse{Messages: []*machine.ServiceList{list}}, nil
}

// Kubeconfig streams the admin kubeconfig as a tar.gz holding one file,
// "kubeconfig", in a single common.Data message.
func (m *machined) Kubeconfig(_ *emptypb.Empty, srv machine.MachineService_KubeconfigServer) error {
	cfg, err := m.current()
	if err != nil {
		return err
	}

	if err := checkControlplane(cfg, "kubeconfig"); err != nil {
		return err
	}

	kc, err := adminKubeconfig(cfg.Cluster())
	if err != nil {
		return err
	}

	archive, err := kubeconfigArchive(kc)
	if err != nil {
		return err
	}

	return srv.Send(&common.Data{Bytes: archive})
}

// Reboot reboots the node (asynchronously, as Talos does).
func (m *machined) Reboot(context.Context, *machine.RebootRequest) (*machine.RebootResponse, error) {
	if _, err := m.lifecycle(); err != nil {
		return nil, err
	}

	actor := uuid.New().String()
	m.node.logf("reboot via API received", "actor", actor)
	m.node.request("reboot", nodeEvent{kind: evReboot, actor: actor})

	return &machine.RebootResponse{Messages: []*machine.Reboot{{ActorId: actor}}}, nil
}

// Shutdown powers the node off, taking machined's lock over (takeOver): in
// the boot that installs a staged upgrade too (lifecycle), whose install it
// cancels.
func (m *machined) Shutdown(context.Context, *machine.ShutdownRequest) (*machine.ShutdownResponse, error) {
	if _, err := m.lifecycle(); err != nil {
		return nil, err
	}

	actor := uuid.New().String()
	m.node.logf("shutdown via API received", "actor", actor)
	m.node.takeOver("shutdown", nodeEvent{kind: evShutdown, actor: actor})

	return &machine.ShutdownResponse{Messages: []*machine.Shutdown{{ActorId: actor}}}, nil
}

// send hands a sequence to the node's run loop without blocking the API.
func (n *Node) send(ev nodeEvent) {
	n.sim.mu.Lock()
	ev.gen = n.gen
	n.sim.mu.Unlock()

	go func() {
		select {
		case n.events <- ev:
		case <-n.ctx.Done():
		case <-time.After(time.Minute):
		}
	}()
}
